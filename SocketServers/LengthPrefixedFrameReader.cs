using System.Buffers.Binary;

namespace SocketServers;

/// <summary>Reads frames that start with their length, for a <see cref="TcpConnectionHandler"/>: a 1-, 2- or 4-byte
/// unsigned header in either byte order, counting the header or not, then that many bytes.</summary>
/// <remarks>
/// Immutable and thread-safe: one reader serves every connection, since it keeps nothing between calls; what has not
/// been consumed comes back at the next <see cref="TcpConnectionHandler.OnReceivedAsync"/>. It allocates nothing.
/// SocketServers/README.md shows the loop of a handler over the frames of its data.
/// </remarks>
public readonly struct LengthPrefixedFrameReader
{
    // 1, 2 or 4; 0 only in default(LengthPrefixedFrameReader), which reads nothing.
    private readonly int _headerLength;
    private readonly int _maxFrameLength;
    private readonly bool _bigEndian;
    private readonly bool _lengthIncludesHeader;

    /// <summary>Creates a reader of frames with a <paramref name="headerLength"/>-byte length header.</summary>
    /// <param name="headerLength">The header's length: 1, 2 or 4 bytes.</param>
    /// <param name="maxFrameLength">The longest frame read, in bytes, header excluded: at least 0, and at most what the
    /// header can count.</param>
    /// <param name="bigEndian">Whether the header is big-endian (network byte order, the default) or little-endian.</param>
    /// <param name="lengthIncludesHeader">Whether the header counts itself as well as the frame.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="headerLength"/> is not 1, 2 or 4, or
    /// <paramref name="maxFrameLength"/> is negative or more than the header can count.</exception>
    public LengthPrefixedFrameReader(int headerLength, int maxFrameLength, bool bigEndian = true, bool lengthIncludesHeader = false)
    {
        if (headerLength is not (1 or 2 or 4))
        {
            throw new ArgumentOutOfRangeException(nameof(headerLength), headerLength, "The header is 1, 2 or 4 bytes long.");
        }

        long countable = (headerLength == 4 ? int.MaxValue : (1L << (8 * headerLength)) - 1) - (lengthIncludesHeader ? headerLength : 0);
        ArgumentOutOfRangeException.ThrowIfNegative(maxFrameLength);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(maxFrameLength, (int)countable);
        _headerLength = headerLength;
        _maxFrameLength = maxFrameLength;
        _bigEndian = bigEndian;
        _lengthIncludesHeader = lengthIncludesHeader;
    }

    /// <summary>Gets the header's length in bytes: 1, 2 or 4.</summary>
    public int HeaderLength => _headerLength;

    /// <summary>Gets the longest frame read, in bytes, header excluded.</summary>
    public int MaxFrameLength => _maxFrameLength;

    /// <summary>Gets whether the header is big-endian (network byte order).</summary>
    public bool IsBigEndian => _bigEndian;

    /// <summary>Gets whether the header counts itself as well as the frame.</summary>
    public bool LengthIncludesHeader => _lengthIncludesHeader;

    /// <summary>Reads the frame at the start of <paramref name="data"/>.</summary>
    /// <param name="data">The bytes received and not consumed yet, or what follows the frames already read from them.</param>
    /// <param name="frame">When <see cref="FrameStatus.Complete"/>, where the frame's bytes lie in <paramref name="data"/>,
    /// header excluded; otherwise an empty range.</param>
    /// <param name="consumed">When <see cref="FrameStatus.Complete"/>, the bytes the frame takes, header included;
    /// otherwise 0.</param>
    /// <returns><see cref="FrameStatus.Complete"/>; <see cref="FrameStatus.Incomplete"/> while the header or the frame
    /// is not whole; <see cref="FrameStatus.TooLong"/> once a header says the frame is longer than
    /// <see cref="MaxFrameLength"/>; or <see cref="FrameStatus.Invalid"/> for a header that counts itself and is
    /// smaller than itself.</returns>
    /// <exception cref="InvalidOperationException">The reader is <see langword="default"/>, made without a constructor.</exception>
    public FrameStatus TryReadFrame(ReadOnlySpan<byte> data, out Range frame, out int consumed)
    {
        frame = default;
        consumed = 0;
        if (data.Length < _headerLength || _headerLength == 0)
        {
            return _headerLength == 0 ? ThrowDefault() : FrameStatus.Incomplete;
        }

        long length = ReadHeader(data) - (_lengthIncludesHeader ? _headerLength : 0);
        if (length < 0)
        {
            return FrameStatus.Invalid;
        }

        if (length > _maxFrameLength)
        {
            return FrameStatus.TooLong;
        }

        int end = _headerLength + (int)length;
        if (data.Length < end)
        {
            return FrameStatus.Incomplete;
        }

        frame = new Range(_headerLength, end);
        consumed = end;
        return FrameStatus.Complete;
    }

    /// <summary>Writes the header of a <paramref name="frameLength"/>-byte frame, for a reply in the same framing.</summary>
    /// <param name="destination">Where the header goes: at least <see cref="HeaderLength"/> bytes.</param>
    /// <param name="frameLength">The frame's length, header excluded: 0 to <see cref="MaxFrameLength"/>.</param>
    /// <returns>The header's length, <see cref="HeaderLength"/>.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="frameLength"/> is negative or over
    /// <see cref="MaxFrameLength"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="destination"/> is shorter than the header.</exception>
    /// <exception cref="InvalidOperationException">The reader is <see langword="default"/>, made without a constructor.</exception>
    public int WriteHeader(Span<byte> destination, int frameLength)
    {
        if (_headerLength == 0)
        {
            ThrowDefault();
        }

        ArgumentOutOfRangeException.ThrowIfNegative(frameLength);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(frameLength, _maxFrameLength);
        if (destination.Length < _headerLength)
        {
            throw new ArgumentException($"The header takes {_headerLength} bytes.", nameof(destination));
        }

        uint value = (uint)frameLength + (uint)(_lengthIncludesHeader ? _headerLength : 0);
        switch (_headerLength)
        {
            case 1:
                destination[0] = (byte)value;
                break;
            case 2 when _bigEndian:
                BinaryPrimitives.WriteUInt16BigEndian(destination, (ushort)value);
                break;
            case 2:
                BinaryPrimitives.WriteUInt16LittleEndian(destination, (ushort)value);
                break;
            case 4 when _bigEndian:
                BinaryPrimitives.WriteUInt32BigEndian(destination, value);
                break;
            default:
                BinaryPrimitives.WriteUInt32LittleEndian(destination, value);
                break;
        }

        return _headerLength;
    }

    private long ReadHeader(ReadOnlySpan<byte> data) => _headerLength switch
    {
        1 => data[0],
        2 => _bigEndian ? BinaryPrimitives.ReadUInt16BigEndian(data) : BinaryPrimitives.ReadUInt16LittleEndian(data),
        _ => _bigEndian ? BinaryPrimitives.ReadUInt32BigEndian(data) : BinaryPrimitives.ReadUInt32LittleEndian(data),
    };

    [System.Diagnostics.CodeAnalysis.DoesNotReturn]
    [System.Diagnostics.StackTraceHidden]
    private static FrameStatus ThrowDefault()
        => throw new InvalidOperationException($"A default {nameof(LengthPrefixedFrameReader)} reads nothing: make it with its constructor.");
}
