# turn .git/index into sharedindex.<H> + a main index holding no entries
use strict; use Digest::SHA qw(sha1);
open my $fh,'<:raw','.git/index' or die; local $/; my $d=<$fh>; close $fh;
my $h=unpack('H*',substr($d,-20));
open $fh,'>:raw',".git/sharedindex.$h" or die; print $fh $d; close $fh;
my $e=pack('NN',0,1).pack('NN',0,0).pack('N',0); my $m=pack('a4NN','DIRC',2,0).'link'.pack('N',20+2*length($e)).substr($d,-20).$e.$e;
$m.=sha1($m); open $fh,'>:raw','.git/index' or die; print $fh $m; close $fh;
