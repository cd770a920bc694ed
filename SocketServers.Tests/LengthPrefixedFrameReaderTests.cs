using System.Text;

namespace SocketServers.Tests;

public sealed class LengthPrefixedFrameReaderTests
{
    // The same 3-byte frame "abc" under each header: its length written by hand, not by WriteHeader.
    [TestCase(1, true, false, new byte[] { 3 })]
    [TestCase(1, false, true, new byte[] { 4 })]
    [TestCase(2, true, false, new byte[] { 0, 3 })]
    [TestCase(2, false, false, new byte[] { 3, 0 })]
    [TestCase(2, true, true, new byte[] { 0, 5 })]
    [TestCase(4, true, false, new byte[] { 0, 0, 0, 3 })]
    [TestCase(4, false, false, new byte[] { 3, 0, 0, 0 })]
    [TestCase(4, true, true, new byte[] { 0, 0, 0, 7 })]
    [TestCase(4, false, true, new byte[] { 7, 0, 0, 0 })]
    public void TryReadFrame_EachHeader_ReadsTheFrameAndWriteHeaderWritesTheSameHeader(int headerLength, bool bigEndian, bool includesHeader, byte[] header)
    {
        var reader = new LengthPrefixedFrameReader(headerLength, 100, bigEndian, includesHeader);
        byte[] data = [.. header, .. "abcNEXT"u8];
        byte[] written = new byte[8];

        FrameStatus status = reader.TryReadFrame(data, out Range frame, out int consumed);
        int headerWritten = reader.WriteHeader(written, 3);

        Assert.That(status, Is.EqualTo(FrameStatus.Complete));
        Assert.That(Encoding.ASCII.GetString(data.AsSpan()[frame]), Is.EqualTo("abc"));
        Assert.That(consumed, Is.EqualTo(headerLength + 3));
        Assert.That(written[..headerWritten], Is.EqualTo(header));
    }

    [TestCase(1)]
    [TestCase(2)]
    [TestCase(3)]
    [TestCase(7)]
    [TestCase(1000)]
    public void TryReadFrame_StreamSplitIntoChunks_EachFrameReadOnceWhole(int chunkSize)
    {
        var reader = new LengthPrefixedFrameReader(2, 1000);
        string[] messages = ["", "a", "hello", new string('x', 300), "end"];

        var (frames, last, left) = FrameFeed.Feed(reader.TryReadFrame, Stream(reader, messages), chunkSize);

        Assert.That(frames.Select(frame => Encoding.ASCII.GetString(frame)), Is.EqualTo(messages));
        Assert.That((last, left), Is.EqualTo((FrameStatus.Incomplete, 0)));
    }

    [Test]
    public void TryReadFrame_FramesCoalescedWithAHalfFrame_ReadsTheWholeOnesAndLeavesTheHalf()
    {
        var reader = new LengthPrefixedFrameReader(4, 1000, bigEndian: false);
        byte[] stream = Stream(reader, ["one", "two", "three"]);

        var (frames, last, left) = FrameFeed.Feed(reader.TryReadFrame, stream[..^2], stream.Length);

        Assert.That(frames.Select(frame => Encoding.ASCII.GetString(frame)), Is.EqualTo(new[] { "one", "two" }));
        Assert.That((last, left), Is.EqualTo((FrameStatus.Incomplete, 4 + 3)));
    }

    [Test]
    public void TryReadFrame_FrameOfTheLongestLength_Complete()
    {
        var reader = new LengthPrefixedFrameReader(2, 10);

        var (frames, last, _) = FrameFeed.Feed(reader.TryReadFrame, Stream(reader, [new string('x', 10)]), 1);

        Assert.That(frames.Single(), Has.Length.EqualTo(10));
        Assert.That(last, Is.EqualTo(FrameStatus.Incomplete));
    }

    // Known from the header alone: a client cannot make the reader wait for more than the maximum.
    [TestCase(false, new byte[] { 0, 11 })]
    [TestCase(true, new byte[] { 0, 13 })]
    public void TryReadFrame_HeaderOverTheMaximum_TooLongAsSoonAsTheHeaderIsRead(bool includesHeader, byte[] header)
    {
        var reader = new LengthPrefixedFrameReader(2, 10, lengthIncludesHeader: includesHeader);

        FrameStatus status = reader.TryReadFrame(header, out Range frame, out int consumed);

        Assert.That((status, frame, consumed), Is.EqualTo((FrameStatus.TooLong, default(Range), 0)));
    }

    [Test]
    public void TryReadFrame_FourByteHeaderOverIntMaxValue_TooLong()
    {
        var reader = new LengthPrefixedFrameReader(4, int.MaxValue);

        Assert.That(reader.TryReadFrame(new byte[] { 0xff, 0xff, 0xff, 0xff, 1 }, out _, out _), Is.EqualTo(FrameStatus.TooLong));
    }

    [TestCase(1, new byte[] { 0 })]
    [TestCase(2, new byte[] { 0, 1 })]
    [TestCase(4, new byte[] { 0, 0, 0, 3 })]
    public void TryReadFrame_HeaderCountingItselfSmallerThanItself_Invalid(int headerLength, byte[] header)
    {
        var reader = new LengthPrefixedFrameReader(headerLength, 100, lengthIncludesHeader: true);

        Assert.That(reader.TryReadFrame(header, out _, out int consumed), Is.EqualTo(FrameStatus.Invalid));
        Assert.That(consumed, Is.Zero);
    }

    [Test]
    public void TryReadFrame_HalfAHeader_Incomplete()
    {
        var reader = new LengthPrefixedFrameReader(4, 100);

        Assert.That(reader.TryReadFrame(new byte[] { 0, 0, 0 }, out _, out int consumed), Is.EqualTo(FrameStatus.Incomplete));
        Assert.That(consumed, Is.Zero);
    }

    [Test]
    public void TryReadFrame_ManyFrames_AllocatesNothing()
    {
        var reader = new LengthPrefixedFrameReader(2, 1000);
        byte[] stream = Stream(reader, Enumerable.Repeat("message", 100).ToArray());
        long allocated = FrameFeed.BytesAllocatedReading(reader.TryReadFrame, stream, out int frames);

        Assert.That(frames, Is.EqualTo(100));
        Assert.That(allocated, Is.Zero);
    }

    [TestCase(0, 10, "headerLength")]
    [TestCase(3, 10, "headerLength")]
    [TestCase(1, -1, "maxFrameLength")]
    [TestCase(1, 256, "maxFrameLength")]
    [TestCase(2, 65536, "maxFrameLength")]
    public void Constructor_OutOfRange_Throws(int headerLength, int maxFrameLength, string parameter)
    {
        Assert.That(
            () => new LengthPrefixedFrameReader(headerLength, maxFrameLength),
            Throws.TypeOf<ArgumentOutOfRangeException>().With.Property(nameof(ArgumentException.ParamName)).EqualTo(parameter));
    }

    [Test]
    public void Constructor_MaximumTheHeaderCountingItselfCannotCount_Throws()
    {
        Assert.That(() => new LengthPrefixedFrameReader(1, 255, lengthIncludesHeader: true), Throws.TypeOf<ArgumentOutOfRangeException>());
        Assert.That(new LengthPrefixedFrameReader(1, 254, lengthIncludesHeader: true).MaxFrameLength, Is.EqualTo(254));
    }

    [Test]
    public void WriteHeader_OverTheMaximumOrTooSmallADestination_Throws()
    {
        var reader = new LengthPrefixedFrameReader(2, 10);

        Assert.That(() => reader.WriteHeader(new byte[2], 11), Throws.TypeOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("frameLength"));
        Assert.That(() => reader.WriteHeader(new byte[1], 5), Throws.ArgumentException.With.Property("ParamName").EqualTo("destination"));
    }

    [Test]
    public void TryReadFrame_DefaultReader_Throws()
    {
        LengthPrefixedFrameReader reader = default;

        Assert.That(() => reader.TryReadFrame(new byte[4], out _, out _), Throws.InvalidOperationException);
        Assert.That(() => reader.WriteHeader(new byte[4], 0), Throws.InvalidOperationException);
    }

    private static byte[] Stream(LengthPrefixedFrameReader reader, string[] messages)
    {
        var stream = new List<byte>();
        byte[] header = new byte[4];
        foreach (string message in messages)
        {
            stream.AddRange(header[..reader.WriteHeader(header, message.Length)]);
            stream.AddRange(Encoding.ASCII.GetBytes(message));
        }

        return [.. stream];
    }
}
