// Two enigma.js sessions on one X-Qlik-Session: node enigma_shared.js <ws base url> <app id>
// The first socket's list object must hear of the second socket's selection without asking.
// Prints one JSON object with what the first client saw; the pytest test checks it.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const WebSocket = require('ws');

const [base, appId] = process.argv.slice(2);

function open() {
  return enigma.create({
    schema,
    url: `${base}/app/engineData`,
    createSocket: (url) => new WebSocket(url, { headers: { 'X-Qlik-Session': 'enigma-two-tabs' } }),
  });
}

async function main() {
  const first = open();
  const doc = await (await first.open()).openDoc(appId);
  const list = await doc.createSessionObject({
    qInfo: { qType: 'filterbox' },
    qListObjectDef: { qDef: { qFieldDefs: ['Region'] } },
  });
  await list.getLayout();
  const heard = new Promise((resolve) => { list.once('changed', resolve); });

  const second = open();
  const sameDoc = await (await second.open()).getActiveDoc();
  await (await sameDoc.getField('Region')).selectValues([{ qText: 'North' }]);
  const timeout = new Promise((resolve) => { setTimeout(() => resolve('timeout'), 5000); });
  const out = { heard: (await Promise.race([heard.then(() => 'changed'), timeout])) };
  out.selected = (await list.getListObjectData('/qListObjectDef', [{ qTop: 0, qLeft: 0, qWidth: 1, qHeight: 20 }]))[0]
    .qMatrix.filter((row) => row[0].qState === 'S').map((row) => row[0].qText);
  await second.close();
  await first.close();
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => { process.stderr.write(String(err && err.stack ? err.stack : err)); process.exit(1); });
