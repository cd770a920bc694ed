namespace SocketServers.Tests;

/// <summary>Feeds a stream to a frame reader as a handler's <c>OnReceivedAsync</c> gets it: each chunk after what the
/// calls before did not consume, the frames read in a loop and the rest kept for the next chunk.</summary>
internal static class FrameFeed
{
    /// <summary>A reader's <c>TryReadFrame</c>.</summary>
    public delegate FrameStatus Reader(ReadOnlySpan<byte> data, out Range frame, out int consumed);

    /// <summary>Feeds <paramref name="stream"/> in chunks of <paramref name="chunkSizes"/> (repeated over the stream).</summary>
    /// <returns>Each frame read, in order, what the last call returned, and the bytes left unconsumed.</returns>
    public static (List<byte[]> Frames, FrameStatus Last, int Left) Feed(Reader read, byte[] stream, params int[] chunkSizes)
    {
        var frames = new List<byte[]>();
        byte[] pending = [];
        FrameStatus status = FrameStatus.Incomplete;
        for (int at = 0, chunk = 0; at < stream.Length; chunk++)
        {
            int size = Math.Min(chunkSizes[chunk % chunkSizes.Length], stream.Length - at);
            byte[] data = [.. pending, .. stream.AsSpan(at, size)];
            at += size;
            int consumed = 0;
            while ((status = read(data.AsSpan(consumed), out Range frame, out int length)) == FrameStatus.Complete)
            {
                frames.Add(data.AsSpan(consumed)[frame].ToArray());
                consumed += length;
            }

            pending = data[consumed..];
            if (status is FrameStatus.TooLong or FrameStatus.Invalid)
            {
                break;
            }
        }

        return (frames, status, pending.Length);
    }

    /// <summary>Reads the frames of <paramref name="stream"/> in one loop, as a handler given it whole would.</summary>
    /// <returns>How many whole frames it holds at its start.</returns>
    public static int CountFrames(Reader read, byte[] stream)
    {
        int frames = 0;
        for (int at = 0; read(stream.AsSpan(at), out _, out int length) == FrameStatus.Complete; at += length)
        {
            frames++;
        }

        return frames;
    }

    /// <summary>Reads the frames of <paramref name="stream"/> twice with <see cref="CountFrames"/>, the second time measured.</summary>
    /// <returns>The bytes the second reading allocated on this thread.</returns>
    public static long BytesAllocatedReading(Reader read, byte[] stream, out int frames)
    {
        CountFrames(read, stream);
        long before = GC.GetAllocatedBytesForCurrentThread();
        frames = CountFrames(read, stream);
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }
}
