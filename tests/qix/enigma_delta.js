// enigma.js with delta answers (its default) and without: node enigma_delta.js <ws base> <app id>
// Each session lays out a bar chart, selects a customer, lays it out, patches its measure and
// lays it out again. Prints both sessions' layouts and how many delta answers came.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const WebSocket = require('ws');

const [base, appId] = process.argv.slice(2);
const CUBE = {
  qInfo: { qId: 'bar', qType: 'barchart' },
  qHyperCubeDef: {
    qDimensions: [{ qDef: { qFieldDefs: ['Customer'] } }],
    qMeasures: [{ qDef: { qDef: 'Sum(Amount)' } }],
    qInitialDataFetch: [{ qTop: 0, qLeft: 0, qWidth: 2, qHeight: 20 }],
    qSuppressMissing: true,
  },
};

async function layouts(delta, counts) {
  const session = enigma.create({
    schema,
    url: `${base}/app/engineData`,
    createSocket: (url) => new WebSocket(url),
    protocol: { delta },
  });
  session.on('traffic:received', (data) => {
    if (data.delta) {
      counts.deltaAnswers += 1;
      const ops = data.result && data.result.qLayout;
      if (ops && counts.layouts > 0 && ops.some((op) => op.path === '/')) {
        counts.fullDeltaAnswers += 1;
      }
    }
  });
  const doc = await (await session.open()).openDoc(appId);
  const chart = await doc.createSessionObject(CUBE);
  const out = [await chart.getLayout()];
  counts.layouts += 1;
  await chart.selectHyperCubeValues('/qHyperCubeDef', 0, [1], false);
  out.push(await chart.getLayout());
  await chart.applyPatches([{ qOp: 'replace', qPath: '/qHyperCubeDef/qMeasures/0/qDef/qDef', qValue: '"Sum(Amount)*3"' }], false);
  out.push(await chart.getLayout());
  await session.close();
  return out;
}

async function main() {
  const counts = { deltaAnswers: 0, fullDeltaAnswers: 0, layouts: 0 };
  const withDelta = await layouts(true, counts);
  const plain = { deltaAnswers: 0, fullDeltaAnswers: 0, layouts: 0 };
  const withoutDelta = await layouts(false, plain);
  process.stdout.write(JSON.stringify({
    withDelta,
    withoutDelta,
    deltaAnswers: counts.deltaAnswers,
    fullDeltaAnswers: counts.fullDeltaAnswers,
    plainDeltaAnswers: plain.deltaAnswers,
  }));
}

main().catch((err) => { process.stderr.write(String(err && err.stack ? err.stack : err)); process.exit(1); });
