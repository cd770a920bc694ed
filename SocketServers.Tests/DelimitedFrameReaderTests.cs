using System.Text;

namespace SocketServers.Tests;

public sealed class DelimitedFrameReaderTests
{
    [TestCase("a\nb\r\n\nc\rd\r\n", new[] { "a", "b", "", "c\rd" })]
    [TestCase("x\r\r\n", new[] { "x\r" })]
    public void Line_LinesEndedByLfOrCrlf_ReadWithoutTheirEnds(string stream, string[] lines)
    {
        var reader = DelimitedFrameReader.Line(100);

        var (frames, last, left) = FrameFeed.Feed(reader.TryReadFrame, Encoding.ASCII.GetBytes(stream), stream.Length);

        Assert.That(frames.Select(frame => Encoding.ASCII.GetString(frame)), Is.EqualTo(lines));
        Assert.That((last, left), Is.EqualTo((FrameStatus.Incomplete, 0)));
    }

    [Test]
    public void TryReadFrame_Consumed_CountsTheDelimiter()
    {
        var reader = new DelimitedFrameReader("\r\n"u8, 100);

        FrameStatus status = reader.TryReadFrame("ab\r\ncd"u8, out Range frame, out int consumed);

        Assert.That((status, frame, consumed), Is.EqualTo((FrameStatus.Complete, new Range(0, 2), 4)));
    }

    // A delimiter of several bytes split across chunks, and a lone byte of it inside a frame.
    [TestCase(1)]
    [TestCase(2)]
    [TestCase(3)]
    [TestCase(5)]
    [TestCase(1000)]
    public void TryReadFrame_StreamSplitIntoChunks_EachFrameReadOnceWhole(int chunkSize)
    {
        var reader = new DelimitedFrameReader("\r\n"u8, 100);
        string[] messages = ["", "a\rb", "hello\n", new string('x', 100), "end"];
        byte[] stream = Encoding.ASCII.GetBytes(string.Concat(messages.Select(message => message + "\r\n")));

        var (frames, last, left) = FrameFeed.Feed(reader.TryReadFrame, stream, chunkSize);

        Assert.That(frames.Select(frame => Encoding.ASCII.GetString(frame)), Is.EqualTo(messages));
        Assert.That((last, left), Is.EqualTo((FrameStatus.Incomplete, 0)));
    }

    [Test]
    public void TryReadFrame_FramesCoalescedWithAHalfFrame_ReadsTheWholeOnesAndLeavesTheHalf()
    {
        var reader = new DelimitedFrameReader([0], 100);
        byte[] stream = Encoding.ASCII.GetBytes("one\0two\0thr");

        var (frames, last, left) = FrameFeed.Feed(reader.TryReadFrame, stream, stream.Length);

        Assert.That(frames.Select(frame => Encoding.ASCII.GetString(frame)), Is.EqualTo(new[] { "one", "two" }));
        Assert.That((last, left), Is.EqualTo((FrameStatus.Incomplete, 3)));
    }

    // The longest line reads with either end; one byte more is too long, whether its end has come or not.
    [TestCase("xxxxx\n", FrameStatus.Complete)]
    [TestCase("xxxxx\r\n", FrameStatus.Complete)]
    [TestCase("xxxxx\r", FrameStatus.Incomplete)]
    [TestCase("xxxxxx\n", FrameStatus.TooLong)]
    [TestCase("xxxxxx\r", FrameStatus.TooLong)]
    [TestCase("xxxxxxx", FrameStatus.TooLong)]
    [TestCase("xxxxxx", FrameStatus.Incomplete)]
    public void Line_AtTheMaximum_AsDocumented(string data, FrameStatus expected)
    {
        var reader = DelimitedFrameReader.Line(5);

        FrameStatus status = reader.TryReadFrame(Encoding.ASCII.GetBytes(data), out Range frame, out int consumed);

        Assert.That(status, Is.EqualTo(expected));
        Assert.That(frame.End.Value - frame.Start.Value, Is.EqualTo(expected == FrameStatus.Complete ? 5 : 0));
        Assert.That(consumed, Is.EqualTo(expected == FrameStatus.Complete ? data.Length : 0));
    }

    [TestCase("xxxx\r\n", FrameStatus.Complete)]
    [TestCase("xxxx\r", FrameStatus.Incomplete)]
    [TestCase("xxxxx\r", FrameStatus.TooLong)]
    [TestCase("xxxxx\r\n", FrameStatus.TooLong)]
    public void TryReadFrame_AtTheMaximum_AsDocumented(string data, FrameStatus expected)
    {
        var reader = new DelimitedFrameReader("\r\n"u8, 4);

        Assert.That(reader.TryReadFrame(Encoding.ASCII.GetBytes(data), out _, out _), Is.EqualTo(expected));
    }

    // A frame over the maximum is too long however it arrives, and what came before it is read.
    [TestCase(1)]
    [TestCase(4)]
    [TestCase(100)]
    public void TryReadFrame_NoDelimiterPastTheMaximum_FramesBeforeReadThenTooLong(int chunkSize)
    {
        var reader = DelimitedFrameReader.Line(10);
        byte[] stream = Encoding.ASCII.GetBytes("short\n" + new string('x', 50));

        var (frames, last, left) = FrameFeed.Feed(reader.TryReadFrame, stream, chunkSize);

        Assert.That(frames.Select(frame => Encoding.ASCII.GetString(frame)), Is.EqualTo(new[] { "short" }));
        Assert.That(last, Is.EqualTo(FrameStatus.TooLong));
        Assert.That(left, Is.GreaterThanOrEqualTo(12), "reported once the maximum, a CR and an LF had room");
    }

    [Test]
    public void TryReadFrame_ManyFrames_AllocatesNothing()
    {
        var reader = new DelimitedFrameReader("\r\n"u8, 1000);
        byte[] stream = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("message\r\n", 100)));
        long allocated = FrameFeed.BytesAllocatedReading(reader.TryReadFrame, stream, out int frames);

        Assert.That(frames, Is.EqualTo(100));
        Assert.That(allocated, Is.Zero);
    }

    [Test]
    public void Constructor_EmptyDelimiterOrNegativeMaximum_Throws()
    {
        Assert.That(() => new DelimitedFrameReader([], 10), Throws.ArgumentException.With.Property("ParamName").EqualTo("delimiter"));
        Assert.That(() => new DelimitedFrameReader("\n"u8, -1), Throws.TypeOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("maxFrameLength"));
        Assert.That(() => DelimitedFrameReader.Line(int.MaxValue), Throws.TypeOf<ArgumentOutOfRangeException>());
    }

    [Test]
    public void Constructor_Delimiter_CopiedNotHeld()
    {
        byte[] delimiter = [(byte)';'];
        var reader = new DelimitedFrameReader(delimiter, 10);

        delimiter[0] = (byte)',';

        Assert.That(reader.Delimiter.ToArray(), Is.EqualTo(";"u8.ToArray()));
        Assert.That(DelimitedFrameReader.Line(10).Delimiter.ToArray(), Is.EqualTo("\n"u8.ToArray()));
    }

    [Test]
    public void TryReadFrame_DefaultReader_Throws()
    {
        DelimitedFrameReader reader = default;

        Assert.That(() => reader.TryReadFrame("a\n"u8, out _, out _), Throws.InvalidOperationException);
    }
}
