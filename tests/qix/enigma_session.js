// Drives assoc with the real enigma.js: node enigma_session.js <ws base url> <app id> [cube]
// Prints one JSON object with what the client saw; the pytest test checks it.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const WebSocket = require('ws');

const [base, appId, withCube] = process.argv.slice(2);

const listProps = {
  qInfo: { qType: 'filterbox' },
  qListObjectDef: {
    qDef: { qFieldDefs: ['Customer'], qSortCriterias: [{ qSortByLoadOrder: 1 }] },
    qShowAlternatives: true,
    qInitialDataFetch: [{ qTop: 0, qLeft: 0, qWidth: 1, qHeight: 100 }],
  },
};

const cubeProps = {
  qInfo: { qType: 'barchart' },
  qHyperCubeDef: {
    qDimensions: [{ qDef: { qFieldDefs: ['Region'], qSortCriterias: [{ qSortByAscii: 1 }] } }],
    qMeasures: [{ qDef: { qDef: '=Sum(Amount)', qLabel: 'Total' } }, { qDef: { qDef: 'Count(OrderId)' } }],
    qInitialDataFetch: [{ qHeight: 50, qWidth: 3 }],
    qSuppressMissing: true,
  },
};

function states(layout) {
  const out = {};
  for (const row of layout.qListObject.qDataPages[0].qMatrix) {
    out[row[0].qText] = row[0].qState;
  }
  return out;
}

function cubeRows(layout) {
  return layout.qHyperCube.qDataPages[0].qMatrix.map((row) => row.map((c) => c.qText));
}

async function main() {
  const session = enigma.create({
    schema,
    url: `${base}/app/engineData`,
    createSocket: (url) => new WebSocket(url),
  });
  const out = {};
  const global = await session.open();
  out.version = (await global.engineVersion()).qComponentVersion;
  const doc = await global.openDoc(appId);
  const tk = await doc.getTablesAndKeys({ qcx: 1000, qcy: 1000 }, { qcx: 0, qcy: 0 }, 30, true, false);
  out.tables = tk.qtr.map((t) => ({ name: t.qName, rows: t.qNoOfRows, fields: t.qFields.map((f) => f.qName) }));
  out.keys = tk.qk;

  const list = await doc.createSessionObject(listProps);
  out.listType = list.genericType;
  let changed = 0;
  list.on('changed', () => { changed += 1; });
  out.initial = states(await list.getLayout());

  const region = await doc.getField('Region');
  out.fieldSelect = await region.selectValues([{ qText: 'North' }]);
  out.changedAfterField = changed;
  out.afterField = states(await list.getLayout());

  const layout = await list.getLayout();
  const b = layout.qListObject.qDataPages[0].qMatrix.find((row) => row[0].qText === 'b')[0];
  out.listSelect = await list.selectListObjectValues('/qListObjectDef', [b.qElemNumber], true);
  out.changedAfterList = changed;
  const afterList = await list.getLayout();
  out.afterList = states(afterList);
  out.counts = afterList.qListObject.qDimensionInfo.qStateCounts;
  const pages = await list.getListObjectData('/qListObjectDef', [{ qTop: 1, qLeft: 0, qWidth: 1, qHeight: 2 }]);
  out.page = pages[0].qMatrix.map((row) => row[0].qText);

  if (withCube) {
    const cube = await doc.createSessionObject(cubeProps);
    const cubeLayout = await cube.getLayout();
    out.cubeAfterList = cubeRows(cubeLayout);
    out.cubeTotals = cubeLayout.qHyperCube.qGrandTotalRow.map((c) => c.qText);
    await doc.clearAll();
    const full = await cube.getLayout();
    out.cube = cubeRows(full);
    out.cubeSize = full.qHyperCube.qSize;
    const data = await cube.getHyperCubeData('/qHyperCubeDef', [{ qTop: 1, qLeft: 1, qWidth: 2, qHeight: 1 }]);
    out.cubePage = data[0].qMatrix.map((row) => row.map((c) => c.qText));
  }

  await doc.clearAll();
  out.changedAfterClear = changed;
  out.afterClear = states(await list.getLayout());
  try {
    await doc.getField('NoSuchField');
  } catch (err) {
    out.error = { code: err.code, message: err.message };
  }
  await session.close();
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
