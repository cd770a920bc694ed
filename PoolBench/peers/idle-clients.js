'use strict';
// The idle TCP clients of PoolBench's idle-connections check, in a process of their own, so that
// a server in the benchmark's process is alone there: its managed heap holds no client socket, and
// each connection costs that process one descriptor, not two.
// usage: node idle-clients.js HOST PORT COUNT SIZE STEP_SECONDS TOTAL_SECONDS
// Commands come as lines on its standard input, so the parent decides when each step starts:
// 1. "connect": opens COUNT connections to HOST:PORT, at most 256 connects in flight, and prints
//    "connected C failed F" when every connect has succeeded or failed (or STEP_SECONDS passed).
// 2. Holds them idle until the line "echo". A byte received or a connection closed meanwhile is
//    an error.
// 3. "echo": sends one SIZE-byte message on every open connection (its index in the first 8 bytes,
//    a fixed pseudo-random tail), checks each echo byte for byte, prints
//    "result connected C echoed E errors X" when all are done (or STEP_SECONDS passed) and exits.
// It exits by itself when its standard input closes, so it never outlives the benchmark, and after
// TOTAL_SECONDS in any case, with whatever is unfinished counted as an error.
const net = require('net');

const ConnectsInFlight = 256;

const [host, portText, countText, sizeText, stepText, totalText] = process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
const size = Number(sizeText);
const stepMs = Number(stepText) * 1000;
const totalMs = Number(totalText) * 1000;
if (!host || !(port > 0) || !(count > 0) || !(size > 0) || !(stepMs > 0) || !(totalMs > 0)) {
  console.error('usage: node idle-clients.js HOST PORT COUNT SIZE STEP_SECONDS TOTAL_SECONDS');
  process.exit(2);
}

// The tail every message shares: xorshift32 from a fixed seed, so a run is repeatable.
const tail = Buffer.alloc(Math.max(0, size - 8));
for (let i = 0, x = 0x9e3779b9; i < tail.length; i++) {
  x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
  tail[i] = x & 0xff;
}

function message(index) {
  const header = Buffer.alloc(8);
  header.writeBigUInt64LE(BigInt(index));
  return Buffer.concat([header.subarray(0, Math.min(8, size)), tail]);
}

// One entry per connection: its socket, what it sent, what came back so far.
// state: 'connecting' -> 'open' -> 'echoing' -> 'echoed', or 'failed' from any of them.
const clients = [];
let phase = 'waiting'; // -> 'connecting' -> 'holding' -> 'echoing'
let started = 0;
let settled = 0;
let connected = 0;
let echoing = 0;
let echoed = 0;
let echoRequested = false;
let connectTimer = null;
let firstError = null;

function startConnecting() {
  if (phase !== 'waiting') {
    return;
  }

  phase = 'connecting';
  connectTimer = setTimeout(reportConnected, stepMs);
  while (started < Math.min(ConnectsInFlight, count)) {
    open(started++);
  }
}

function open(index) {
  const client = { index, state: 'connecting', socket: null, sent: null, echo: null, received: 0 };
  clients.push(client);
  client.socket = net.connect({ host, port, noDelay: true });
  client.socket.on('connect', () => {
    client.state = 'open';
    connected++;
    connectSettled();
  });
  client.socket.on('data', (chunk) => onData(client, chunk));
  client.socket.on('error', (error) => fail(client, error.message));
  client.socket.on('close', () => fail(client, 'closed by the server'));
}

// A connect succeeded or failed: start the next one, or report when none is left.
function connectSettled() {
  if (phase !== 'connecting') {
    return;
  }

  settled++;
  if (started < count) {
    open(started++);
  } else if (settled === count) {
    reportConnected();
  }
}

function reportConnected() {
  if (phase !== 'connecting') {
    return;
  }

  phase = 'holding';
  clearTimeout(connectTimer);
  for (const client of clients) {
    if (client.state === 'connecting') {
      fail(client, `not connected within ${stepMs / 1000} s`);
    }
  }

  console.log(`connected ${connected} failed ${count - connected}`);
  if (echoRequested) {
    startEcho();
  }
}

function startEcho() {
  echoRequested = true;
  if (phase !== 'holding') {
    return;
  }

  phase = 'echoing';
  setTimeout(() => finish(`not echoed within ${stepMs / 1000} s`), stepMs).unref();
  for (const client of clients) {
    if (client.state === 'open') {
      client.state = 'echoing';
      echoing++;
      client.sent = message(client.index);
      client.echo = Buffer.alloc(size);
      client.socket.write(client.sent);
    }
  }

  finishIfDone();
}

function onData(client, chunk) {
  if (client.state !== 'echoing') {
    fail(client, `received ${chunk.length} byte(s) before it sent any`);
    return;
  }

  if (client.received + chunk.length > size) {
    fail(client, `received ${client.received + chunk.length} bytes for a ${size}-byte message`);
    return;
  }

  chunk.copy(client.echo, client.received);
  client.received += chunk.length;
  if (client.received < size) {
    return;
  }

  if (!client.echo.equals(client.sent)) {
    fail(client, 'the echo differs from the message');
    return;
  }

  client.state = 'echoed';
  echoing--;
  echoed++;
  client.socket.destroy();
  finishIfDone();
}

function fail(client, reason) {
  if (client.state === 'failed' || client.state === 'echoed') {
    return;
  }

  const previous = client.state;
  client.state = 'failed';
  client.socket.destroy();
  if (firstError === null) {
    firstError = `connection ${client.index}: ${reason}`;
  }

  if (previous === 'connecting') {
    connectSettled();
  } else if (previous === 'echoing') {
    echoing--;
    finishIfDone();
  }
}

function finishIfDone() {
  if (phase === 'echoing' && echoing === 0) {
    finish(null);
  }
}

let finished = false;

function finish(reason) {
  if (finished) {
    return;
  }

  finished = true;
  if (reason !== null && firstError === null) {
    firstError = reason;
  }

  if (firstError !== null) {
    console.error(`idle-clients: ${firstError}`);
  }

  // Every connection not echoed in full is an error: it failed to connect, broke while idle,
  // echoed something else, or was unfinished when time ran out.
  console.log(`result connected ${connected} echoed ${echoed} errors ${count - echoed}`);
  process.exit(0);
}

setTimeout(() => finish(`the run took longer than ${totalMs / 1000} s`), totalMs).unref();

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text) => {
  input += text;
  for (let newline = input.indexOf('\n'); newline >= 0; newline = input.indexOf('\n')) {
    const command = input.slice(0, newline).trim();
    input = input.slice(newline + 1);
    if (command === 'connect') {
      startConnecting();
    } else if (command === 'echo') {
      startEcho();
    }
  }
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
