// What corectl's `app ls`, its app check, `objects` and `unbuild` ask, through the real
// enigma.js: node enigma_catalog.js <ws base url> <app id>
// Prints one JSON object with what the client saw; the pytest test checks it.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const WebSocket = require('ws');

const [base, appId] = process.argv.slice(2);

async function main() {
  const session = enigma.create({
    schema,
    url: `${base}/app/engineData`,
    createSocket: (url) => new WebSocket(url),
  });
  const out = {};
  const global = await session.open();
  out.docs = (await global.getDocList()).map((d) => d.qDocId);
  out.entry = (await global.getAppEntry(appId)).qID;
  const doc = await global.openDoc(appId);
  await doc.createDimension({ qInfo: { qId: 'dimC' }, qDim: { qFieldDefs: ['Customer'] } });
  const sheet = await doc.createObject({ qInfo: { qId: 'sheet1', qType: 'sheet' } });
  await sheet.createChild({ qInfo: { qId: 'chart1', qType: 'barchart' } });
  await doc.createSessionObject({ qInfo: { qId: 'mine', qType: 'listbox' } });
  out.infos = (await doc.getAllInfos()).map((i) => `${i.qId}:${i.qType}`).sort();
  out.title = (await doc.getAppProperties()).qTitle;
  const customer = await doc.getField('Customer');
  const region = await doc.getField('Region');
  await customer.selectValues([{ qText: 'a' }]);
  await region.selectValues([{ qText: 'North' }]);
  out.clearAllButThis = await customer.clearAllButThis();
  out.regionCleared = (await region.getCardinal()) > 0
    && (await doc.evaluate("GetSelectedCount(Region)")) === '0';
  out.customerKept = await doc.evaluate("GetFieldSelections(Customer)");
  out.nx = await customer.getNxProperties();
  await session.close();
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
