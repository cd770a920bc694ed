namespace SocketServers;

/// <summary>What a frame reader (<see cref="LengthPrefixedFrameReader"/>, <see cref="DelimitedFrameReader"/>) found at
/// the start of the data it was given.</summary>
public enum FrameStatus
{
    /// <summary>A whole frame: its bytes and how many bytes it takes, header or delimiter included, are given.</summary>
    Complete,

    /// <summary>The start of a frame, or nothing: more data is needed. Nothing is consumed; the same bytes, with what
    /// comes next, are read again at the next call.</summary>
    Incomplete,

    /// <summary>A frame longer than the reader's maximum frame length, known as soon as its header is read or as the
    /// maximum is passed with no delimiter. Nothing is consumed; where the next frame starts is known only to a
    /// length-prefixed reader, so a handler most often replies with an error and closes the connection.</summary>
    TooLong,

    /// <summary>A length header that counts the header itself but is smaller than the header: the stream is not in
    /// this framing. Nothing is consumed.</summary>
    Invalid,
}
