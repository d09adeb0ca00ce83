// Expressions through the real enigma.js: node enigma_expressions.js <ws base url> <app id>
// Prints one JSON object with what the client saw; the pytest test checks it.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const WebSocket = require('ws');

const [base, appId] = process.argv.slice(2);

async function main() {
  const session = enigma.create({
    schema, url: `${base}/app/engineData`, createSocket: (url) => new WebSocket(url),
  });
  const global = await session.open();
  const app = await global.openDoc(appId);
  const out = {};
  await app.createSessionVariable({ qName: 'vTotal', qDefinition: 'Sum($1)' });
  out.evaluate = await app.evaluate('$(vTotal(Amount))');
  out.evaluateEx = await app.evaluateEx("Only({<Customer={'c'}>} Region)");
  out.check = await app.checkExpression('Sum(Amont)');
  const obj = await app.createSessionObject({
    qInfo: { qType: 'kpi' },
    title: { qStringExpression: { qExpr: "='Orders: ' & Count(OrderId)" } },
  });
  out.title = (await obj.getLayout()).title;
  await session.close();
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : JSON.stringify(err)));
  process.exit(1);
});
