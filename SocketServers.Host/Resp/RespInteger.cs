namespace SocketServers.Resp;

/// <summary>Integers as Redis reads them (its <c>string2ll</c>), in a value for INCR and in a request's lengths: an
/// optional minus and decimal digits, no other sign, no leading zero, no space, within a <see cref="long"/>.</summary>
internal static class RespInteger
{
    /// <summary>Reads <paramref name="text"/> as a whole integer, as Redis does.</summary>
    /// <returns>Whether it is one; its value in <paramref name="value"/>.</returns>
    public static bool TryParse(ReadOnlySpan<byte> text, out long value)
    {
        value = 0;
        if (text.Length is 0 or > 20)
        {
            return false;
        }

        if (text is [(byte)'0'])
        {
            return true;
        }

        bool negative = text[0] == (byte)'-';
        ReadOnlySpan<byte> digits = negative ? text[1..] : text;
        if (digits.IsEmpty || digits[0] is < (byte)'1' or > (byte)'9')
        {
            return false;
        }

        ulong magnitude = 0;
        foreach (byte digit in digits)
        {
            if (digit is < (byte)'0' or > (byte)'9' || magnitude > (ulong.MaxValue - 9) / 10)
            {
                return false;
            }

            magnitude = (magnitude * 10) + (ulong)(digit - '0');
        }

        if (magnitude > (negative ? (ulong)long.MaxValue + 1 : long.MaxValue))
        {
            return false;
        }

        value = negative ? (long)(0 - magnitude) : (long)magnitude;
        return true;
    }
}
