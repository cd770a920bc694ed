using System.Buffers.Binary;

namespace PoolBench.Echo.Load;

/// <summary>
/// The content of echo message number <c>seq</c>: its first eight bytes (or all, if the message is
/// shorter) are <c>seq</c> in little-endian order, the rest a fixed pseudo-random tail. Filling and
/// checking are a copy and a vectorised compare, and a reordered, lost, duplicated or corrupted
/// message fails the check.
/// </summary>
internal sealed class MessagePattern
{
    public const int HeaderSize = sizeof(long);

    private readonly byte[] _tail;

    public MessagePattern(int size)
    {
        Size = size;
        _tail = new byte[Math.Max(0, size - HeaderSize)];
        new Random(size).NextBytes(_tail);
    }

    public int Size { get; }

    public void Fill(Span<byte> message, long seq)
    {
        Span<byte> header = stackalloc byte[HeaderSize];
        BinaryPrimitives.WriteInt64LittleEndian(header, seq);
        header[..Math.Min(HeaderSize, Size)].CopyTo(message);
        _tail.CopyTo(message[Math.Min(HeaderSize, Size)..]);
    }

    public bool Matches(ReadOnlySpan<byte> message, long seq)
    {
        Span<byte> header = stackalloc byte[HeaderSize];
        BinaryPrimitives.WriteInt64LittleEndian(header, seq);
        int headerSize = Math.Min(HeaderSize, Size);
        return message.Length == Size
            && message[..headerSize].SequenceEqual(header[..headerSize])
            && message[headerSize..].SequenceEqual(_tail);
    }

    /// <summary>The sequence number a message claims to be; needs <see cref="Size"/> of at least eight.</summary>
    public static long SequenceOf(ReadOnlySpan<byte> message) => BinaryPrimitives.ReadInt64LittleEndian(message);
}
