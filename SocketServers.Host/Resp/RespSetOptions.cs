using System.Text;

namespace SocketServers.Resp;

/// <summary>The options of a SET after its key and value, read as Redis reads them: NX or XX, and one of EX, PX, EXAT,
/// PXAT and KEEPTTL. GET is not among them: a syntax error here.</summary>
/// <param name="Condition">NX, XX, or neither.</param>
/// <param name="ExpiresAt">When the key expires, in <see cref="RespStore.Now"/>'s milliseconds; 0 for never, or
/// <see cref="RespStore.KeepExpiry"/>.</param>
internal readonly record struct RespSetOptions(RespStore.SetCondition Condition, long ExpiresAt)
{
    private enum Expiry
    {
        None,
        Seconds,
        Milliseconds,
        UnixSeconds,
        UnixMilliseconds,
        Keep,
    }

    /// <summary>Reads the options.</summary>
    /// <param name="request">The request the arguments lie in.</param>
    /// <param name="options">The arguments after the key and value.</param>
    /// <param name="now">The store's time, for EX and PX.</param>
    /// <param name="parsed">The options, when they are valid.</param>
    /// <returns><see langword="null"/> when they are valid; otherwise Redis's error reply.</returns>
    public static byte[]? TryParse(ReadOnlySpan<byte> request, ReadOnlySpan<(int Start, int Length)> options, long now, out RespSetOptions parsed)
    {
        parsed = default;
        var condition = RespStore.SetCondition.Always;
        Expiry expiry = Expiry.None;
        ReadOnlySpan<byte> time = default;
        for (int i = 0; i < options.Length; i++)
        {
            ReadOnlySpan<byte> option = request.Slice(options[i].Start, options[i].Length);
            Expiry given = ExpiryOf(option);
            if (Ascii.EqualsIgnoreCase(option, "NX"u8) && condition != RespStore.SetCondition.IfPresent)
            {
                condition = RespStore.SetCondition.IfAbsent;
            }
            else if (Ascii.EqualsIgnoreCase(option, "XX"u8) && condition != RespStore.SetCondition.IfAbsent)
            {
                condition = RespStore.SetCondition.IfPresent;
            }
            else if (given == Expiry.Keep && expiry is Expiry.None or Expiry.Keep)
            {
                expiry = Expiry.Keep;
            }
            else if (given is not (Expiry.None or Expiry.Keep) && expiry == Expiry.None && i + 1 < options.Length)
            {
                expiry = given;
                i++;
                time = request.Slice(options[i].Start, options[i].Length);
            }
            else
            {
                return RespReplies.Syntax;
            }
        }

        long expiresAt = 0;
        if (expiry == Expiry.Keep)
        {
            expiresAt = RespStore.KeepExpiry;
        }
        else if (expiry != Expiry.None)
        {
            if (!RespInteger.TryParse(time, out long value))
            {
                return RespReplies.NotInteger;
            }

            bool seconds = expiry is Expiry.Seconds or Expiry.UnixSeconds;
            bool relative = expiry is Expiry.Seconds or Expiry.Milliseconds;
            if (value <= 0 || (seconds && value > long.MaxValue / 1000) || (relative && (seconds ? value * 1000 : value) > long.MaxValue - now))
            {
                return RespReplies.InvalidExpireTime;
            }

            expiresAt = (seconds ? value * 1000 : value) + (relative ? now : 0);
        }

        parsed = new RespSetOptions(condition, expiresAt);
        return null;
    }

    private static Expiry ExpiryOf(ReadOnlySpan<byte> option) => option.Length switch
    {
        2 when Ascii.EqualsIgnoreCase(option, "EX"u8) => Expiry.Seconds,
        2 when Ascii.EqualsIgnoreCase(option, "PX"u8) => Expiry.Milliseconds,
        4 when Ascii.EqualsIgnoreCase(option, "EXAT"u8) => Expiry.UnixSeconds,
        4 when Ascii.EqualsIgnoreCase(option, "PXAT"u8) => Expiry.UnixMilliseconds,
        7 when Ascii.EqualsIgnoreCase(option, "KEEPTTL"u8) => Expiry.Keep,
        _ => Expiry.None,
    };
}
