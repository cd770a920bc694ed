namespace SocketServers.Resp;

/// <summary>The commands the RESP sample knows; <see cref="Unknown"/> for the rest.</summary>
internal enum RespCommand
{
    Unknown,
    Get,
    Set,
    Ping,
    Incr,
    Echo,
    Del,
    Exists,
    Config,
    Command,
    Quit,
    Ttl,
    Pttl,
}
