// Replays answers through enigma.js's own delta handling: node enigma_delta_replay.js <file>
// The file holds {"sequences": [[{"method": "engineVersion" | "getDocList", "answer": {...}}]]}:
// each sequence runs in a session of its own, each step calls that Global method, and a socket
// made here (no server) answers it with the given message (its id filled in). Prints, per
// sequence, the values enigma.js handed back ({"value": …}, or {"rejected": <message>}).
const fs = require('fs');
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');

const { sequences } = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const answers = [];

function fakeSocket() {
  const socket = {
    OPEN: 1,
    readyState: 1,
    send(text) {
      const request = JSON.parse(text);
      const answer = { ...answers.shift(), id: request.id };
      setImmediate(() => socket.onmessage({ data: JSON.stringify(answer) }));
    },
    close() {
      socket.readyState = 3;
      setImmediate(() => socket.onclose({ code: 1000, reason: '' }));
    },
  };
  setImmediate(() => socket.onopen());
  return socket;
}

async function replay(steps) {
  const session = enigma.create({ schema, url: 'ws://replay', createSocket: fakeSocket });
  const global = await session.open();
  const seen = [];
  for (const step of steps) {
    answers.push(step.answer);
    try {
      seen.push({ value: await global[step.method]() });
    } catch (err) {
      seen.push({ rejected: String(err && err.message) });
    }
  }
  await session.close();
  return seen;
}

async function main() {
  const out = [];
  for (const steps of sequences) {
    out.push(await replay(steps));
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => { process.stderr.write(String(err && err.stack ? err.stack : err)); process.exit(1); });
