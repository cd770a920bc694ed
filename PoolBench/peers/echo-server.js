'use strict';
// RFC 862 echo over TCP and UDP: the peer server PoolBench loads beside ours.
// usage: node echo-server.js [port] [address]; port 0 (the default) picks free ports.
// When both listen it prints "tcp echo listening on ADDRESS:PORT" and the same for udp, as our
// servers' host does. It exits when its standard input closes, so it never outlives the
// benchmark that started it.
const net = require('net');
const dgram = require('dgram');

const port = Number(process.argv[2] || 0);
const address = process.argv[3] || '127.0.0.1';

const tcp = net.createServer({ noDelay: true }, (socket) => {
  socket.on('error', () => socket.destroy());
  socket.pipe(socket);
});

const udp = dgram.createSocket(address.includes(':') ? 'udp6' : 'udp4');
udp.on('message', (message, sender) => udp.send(message, sender.port, sender.address));
udp.on('error', (error) => console.error(`udp: ${error.message}`));

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();

tcp.listen(port, address, () => {
  udp.bind(port, address, () => {
    console.log(`tcp echo listening on ${address}:${tcp.address().port}`);
    console.log(`udp echo listening on ${address}:${udp.address().port}`);
  });
});
