#!/usr/bin/perl
# usage: cachetree.pl INDEXFILE NODENAME NEWSHAHEX  -- rewrites the TREE-extension oid of NODENAME
use strict; use Digest::SHA qw(sha1);
my ($f,$node,$hex)=@ARGV; open my $fh,'<:raw',$f or die; local $/; my $d=<$fh>; close $fh;
my ($sig,$ver,$n)=unpack('a4NN',$d); die "not index" unless $sig eq 'DIRC';
my $p=12;
for (1..$n){ my $flags=unpack('n',substr($d,$p+60,2)); my $fix=62; $fix+=2 if ($ver>=3 && ($flags & 0x4000));
  die "v4 unsupported" if $ver==4; my $z=index($d,"\0",$p+$fix); my $nl=$z-($p+$fix); $p+= (($fix+$nl+8) & ~7); }
my $end=length($d)-20; my $done=0;
while($p<$end){ my ($es,$sz)=unpack('a4N',substr($d,$p,8)); my $q=$p+8; my $qe=$q+$sz;
  if($es eq 'TREE'){ while($q<$qe){ my $z=index($d,"\0",$q); my $name=substr($d,$q,$z-$q); my $nl=index($d,"\n",$z);
      my ($ec,$sc)=split / /,substr($d,$z+1,$nl-$z-1); $q=$nl+1;
      if($ec>=0){ if($name eq $node && !$done){ substr($d,$q,20)=pack('H*',$hex); $done=1; print STDERR "patched $name ($ec entries)\n"; } $q+=20; } } }
  $p=$qe; }
die "node not found" unless $done;
$d=substr($d,0,$end).sha1(substr($d,0,$end)); open $fh,'>:raw',$f or die; print $fh $d; close $fh;
