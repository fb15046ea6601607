#!/usr/bin/perl
# idxname.pl IDXFILE NEWOID : rename the only object of a one-object pack index (v2) to NEWOID
use strict; use Digest::SHA qw(sha1);
my ($f,$hex)=@ARGV; open my $fh,'<:raw',$f or die; local $/; my $d=<$fh>; close $fh;
die "not v2 idx" unless substr($d,0,8) eq "\377tOc\0\0\0\2";
my $n=unpack('N',substr($d,8+255*4,4)); die "want 1 object, have $n" unless $n==1;
my $new=pack('H*',$hex); my $fb=ord(substr($new,0,1));
for my $i(0..255){ substr($d,8+4*$i,4)=pack('N',$i>=$fb?1:0); }
substr($d,8+1024,20)=$new;
$d=substr($d,0,-20).sha1(substr($d,0,-20));
chmod 0644,$f; open $fh,'>:raw',$f or die; print $fh $d; close $fh;
