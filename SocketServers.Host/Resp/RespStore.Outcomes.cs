namespace SocketServers.Resp;

internal sealed partial class RespStore
{
    /// <summary>When <see cref="Set"/> sets a key.</summary>
    internal enum SetCondition
    {
        /// <summary>Whether it is there or not.</summary>
        Always,

        /// <summary>Only if it is not there (SET's NX).</summary>
        IfAbsent,

        /// <summary>Only if it is there (SET's XX).</summary>
        IfPresent,
    }

    /// <summary>What <see cref="Set"/> did.</summary>
    internal enum SetOutcome
    {
        /// <summary>The key holds the value.</summary>
        Done,

        /// <summary>The condition did not hold; nothing changed.</summary>
        NotSet,

        /// <summary>The value would take the store over its <see cref="MaxMemory"/>; nothing changed.</summary>
        OutOfMemory,

        /// <summary>The entry was removed meanwhile (never returned by <see cref="Set"/>).</summary>
        Removed,
    }

    /// <summary>What <see cref="Increment"/> did.</summary>
    internal enum IncrementOutcome
    {
        /// <summary>The value is the old one plus 1.</summary>
        Done,

        /// <summary>The value is not an integer; unchanged.</summary>
        NotAnInteger,

        /// <summary>The value is <see cref="long.MaxValue"/>; unchanged.</summary>
        Overflow,

        /// <summary>A new key, or room for the new value, would take the store over its <see cref="MaxMemory"/>.</summary>
        OutOfMemory,

        /// <summary>The entry was removed meanwhile (never returned by <see cref="Increment"/>).</summary>
        Removed,
    }
}
