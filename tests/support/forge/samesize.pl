# perl samesize.pl OBJECT CONTENT: rewrite the loose object file OBJECT in place (same inode,
# size and mode) as a blob holding the bytes of the file CONTENT, padded with a trailing `#`
# line until some zlib level gives exactly OBJECT's size (a stored stream fits any size).
use strict;
use Compress::Zlib;

my ($object, $content_file) = @ARGV;
my $size = -s $object;
open(my $in, '<', $content_file) or die "$content_file: $!";
my $content = do { local $/; <$in> };
close $in;
for my $pad (0 .. 20000) {
    my $body = $content . '#' . ('x' x $pad) . "\n";
    my $raw = 'blob ' . length($body) . "\0" . $body;
    for my $level (0 .. 9) {
        my ($z) = deflateInit(-Level => $level);
        my ($head) = $z->deflate($raw);
        my ($tail) = $z->flush();
        next unless length($head . $tail) == $size;
        my $mode = (stat $object)[2] & 07777;
        chmod 0644, $object;
        open(my $out, '+<', $object) or die "$object: $!";
        binmode $out;
        print $out $head . $tail;
        close $out;
        chmod $mode, $object;
        exit 0;
    }
}
die "no padding gives $size bytes\n";
