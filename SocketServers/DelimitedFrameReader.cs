namespace SocketServers;

/// <summary>Reads frames that end with a delimiter, for a <see cref="TcpConnectionHandler"/>: lines, or frames ended by
/// any sequence of bytes, up to a maximum frame length.</summary>
/// <remarks>
/// Immutable and thread-safe: one reader serves every connection, since it keeps nothing between calls; what has not
/// been consumed comes back at the next <see cref="TcpConnectionHandler.OnReceivedAsync"/>. It allocates nothing but
/// its copy of the delimiter, once. It looks at no more than <see cref="MaxFrameLength"/> bytes and a delimiter's per
/// call, so a client that never sends the delimiter costs a bounded search. SocketServers/README.md shows the loop of
/// a handler over the frames of its data.
/// </remarks>
public readonly struct DelimitedFrameReader
{
    private static readonly byte[] s_lineFeed = [(byte)'\n'];

    // Never empty; null only in default(DelimitedFrameReader), which reads nothing.
    private readonly byte[] _delimiter;
    private readonly int _maxFrameLength;

    // Whether a CR before the LF delimiter is dropped from the frame.
    private readonly bool _isLine;

    /// <summary>Creates a reader of frames ended by <paramref name="delimiter"/>.</summary>
    /// <param name="delimiter">The bytes that end a frame, such as <c>"\r\n"u8</c> or a single 0; copied.</param>
    /// <param name="maxFrameLength">The longest frame read, in bytes, delimiter excluded: at least 0.</param>
    /// <exception cref="ArgumentException"><paramref name="delimiter"/> is empty.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxFrameLength"/> is negative, or so large that
    /// with the delimiter it passes <see cref="int.MaxValue"/>.</exception>
    public DelimitedFrameReader(ReadOnlySpan<byte> delimiter, int maxFrameLength)
        : this(delimiter.ToArray(), maxFrameLength, isLine: false)
    {
    }

    private DelimitedFrameReader(byte[] delimiter, int maxFrameLength, bool isLine)
    {
        if (delimiter.Length == 0)
        {
            throw new ArgumentException("The delimiter is at least one byte long.", nameof(delimiter));
        }

        ArgumentOutOfRangeException.ThrowIfNegative(maxFrameLength);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(maxFrameLength, int.MaxValue - delimiter.Length - 1);
        _delimiter = delimiter;
        _maxFrameLength = maxFrameLength;
        _isLine = isLine;
    }

    /// <summary>Gets the longest frame read, in bytes, delimiter excluded.</summary>
    public int MaxFrameLength => _maxFrameLength;

    /// <summary>Gets the bytes that end a frame (LF for <see cref="Line"/>).</summary>
    public ReadOnlySpan<byte> Delimiter => _delimiter;

    /// <summary>Creates a reader of lines: a line ends at LF, and a CR just before the LF is not part of it, so that
    /// lines ended by CRLF and by LF alone both read. A CR elsewhere is part of the line.</summary>
    /// <param name="maxFrameLength">The longest line read, in bytes, its CR and LF excluded: at least 0.</param>
    /// <returns>The reader.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxFrameLength"/> is negative or too large.</exception>
    public static DelimitedFrameReader Line(int maxFrameLength) => new(s_lineFeed, maxFrameLength, isLine: true);

    /// <summary>Reads the frame at the start of <paramref name="data"/>.</summary>
    /// <param name="data">The bytes received and not consumed yet, or what follows the frames already read from them.</param>
    /// <param name="frame">When <see cref="FrameStatus.Complete"/>, where the frame's bytes lie in <paramref name="data"/>,
    /// delimiter excluded (and, for a line, a CR before it); otherwise an empty range.</param>
    /// <param name="consumed">When <see cref="FrameStatus.Complete"/>, the bytes the frame takes, delimiter included;
    /// otherwise 0.</param>
    /// <returns><see cref="FrameStatus.Complete"/>; <see cref="FrameStatus.Incomplete"/> while no delimiter has come;
    /// or <see cref="FrameStatus.TooLong"/> once more than <see cref="MaxFrameLength"/> bytes have come without one.</returns>
    /// <exception cref="InvalidOperationException">The reader is <see langword="default"/>, made without a constructor.</exception>
    public FrameStatus TryReadFrame(ReadOnlySpan<byte> data, out Range frame, out int consumed)
    {
        frame = default;
        consumed = 0;
        byte[] delimiter = _delimiter ?? throw new InvalidOperationException(
            $"A default {nameof(DelimitedFrameReader)} reads nothing: make it with its constructor or {nameof(Line)}.");

        // A line's CR counts with its delimiter: a line of the longest length still fits with CRLF.
        int window = _maxFrameLength + delimiter.Length + (_isLine ? 1 : 0);
        ReadOnlySpan<byte> searched = data.Length > window ? data[..window] : data;
        int end = delimiter.Length == 1 ? searched.IndexOf(delimiter[0]) : searched.IndexOf(delimiter);
        if (end < 0)
        {
            return data.Length >= window ? FrameStatus.TooLong : FrameStatus.Incomplete;
        }

        int length = _isLine && end > 0 && data[end - 1] == (byte)'\r' ? end - 1 : end;
        if (length > _maxFrameLength)
        {
            return FrameStatus.TooLong; // a line of the longest length and one byte more, ended by LF alone
        }

        frame = new Range(0, length);
        consumed = end + delimiter.Length;
        return FrameStatus.Complete;
    }
}
