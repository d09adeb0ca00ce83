// The modal selection contract nebula.js relies on, driven with the real enigma.js:
// node enigma_modal.js <ws base url> <app id>. Prints one JSON object; the pytest test checks it.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const WebSocket = require('ws');

const [base, appId] = process.argv.slice(2);

// What sn-bar-chart sends for fields ['Customer', '=Sum(Amount)'] (measure sorted descending).
const barProps = {
  qInfo: { qType: 'barchart' },
  visualization: 'barchart',
  qHyperCubeDef: {
    qDimensions: [{ qDef: { qFieldDefs: ['Customer'], cId: 'd1', qSortCriterias: [{ qSortByLoadOrder: 1, qSortByNumeric: 1, qSortByAscii: 1 }] } }],
    qMeasures: [{ qDef: { qDef: '=Sum(Amount)', cId: 'm1' }, qSortBy: { qSortByLoadOrder: 1, qSortByNumeric: -1 } }],
    qInterColumnSortOrder: [1, 0],
    qSuppressMissing: true,
    qInitialDataFetch: [{ qWidth: 17, qHeight: 500 }],
  },
};

function bars(layout) {
  return layout.qHyperCube.qDataPages[0].qMatrix.map((row) => [row[0].qText, row[1].qNum]);
}

async function main() {
  const session = enigma.create({ schema, url: `${base}/app/engineData`, createSocket: (url) => new WebSocket(url) });
  const out = {};
  const global = await session.open();
  const doc = await global.openDoc(appId);
  const chart = await doc.createSessionObject(barProps);
  let changed = 0;
  chart.on('changed', () => { changed += 1; });
  const first = await chart.getLayout();
  out.before = bars(first);
  out.infoCId = first.qHyperCube.qDimensionInfo[0].cId;
  out.selectionInfo = first.qSelectionInfo;
  const elemOf = (text) => first.qHyperCube.qDataPages[0].qMatrix.find((row) => row[0].qText === text)[0].qElemNumber;

  // A click on bar "b", then Cancel.
  await chart.beginSelections(['/qHyperCubeDef']);
  out.success = await chart.selectHyperCubeValues('/qHyperCubeDef', 0, [elemOf('b')], false);
  const during = await chart.getLayout();
  out.during = { inSelections: during.qSelectionInfo.qInSelections, bars: bars(during) };
  await chart.endSelections(false);
  const cancelled = await chart.getLayout();
  out.cancelled = { inSelections: cancelled.qSelectionInfo.qInSelections, bars: bars(cancelled) };

  // The same click, then Confirm.
  await chart.beginSelections(['/qHyperCubeDef']);
  await chart.selectHyperCubeValues('/qHyperCubeDef', 0, [elemOf('b')], false);
  await chart.endSelections(true);
  const confirmed = await chart.getLayout();
  out.confirmed = { inSelections: confirmed.qSelectionInfo.qInSelections, bars: bars(confirmed) };
  out.changed = changed;

  // The toolbar's lookups: GetObject of an unknown id is error 2 "Object not found".
  try {
    await doc.getObject('FieldList');
  } catch (err) {
    out.notFound = { code: err.code, message: err.message };
  }
  const props = await chart.getEffectiveProperties();
  out.effectiveVisualization = props.visualization;
  await session.close();
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
