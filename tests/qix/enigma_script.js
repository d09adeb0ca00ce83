// Programs that bring their data with a load script, run with the real enigma.js and halyard.js:
// node enigma_script.js <ws base url> <folder with movies.csv>
// Prints one JSON object with what the programs saw; the pytest test checks it.
const enigma = require('enigma.js');
const schema = require('enigma.js/schemas/12.2027.0.json');
const schema32 = require('enigma.js/schemas/3.2.json');
const Halyard = require('halyard.js');
const halyardMixin = require('halyard.js/dist/halyard-enigma-mixin');
const WebSocket = require('ws');

const [base, folder] = process.argv.slice(2);

function open(path, mixins) {
  const session = enigma.create({
    schema, mixins, url: `${base}${path}`, createSocket: (url) => new WebSocket(url),
  });
  return session;
}

const movieCube = {
  qInfo: { qType: 'movies' },
  qHyperCubeDef: {
    qDimensions: [{ qDef: { qFieldDefs: ['Movie'] } }],
    qInitialDataFetch: [{ qHeight: 10, qWidth: 1 }],
  },
};

function cubeColumn(layout) {
  return layout.qHyperCube.qDataPages[0].qMatrix.map((row) => row[0].qText);
}

// core-get-started hello-data: a session app loading a CSV through a folder connection.
async function helloData(out) {
  const session = open('/app/');
  const global = await session.open();
  const app = await global.createSessionApp();
  out.connectionId = await app.createConnection({ qName: 'data', qConnectionString: folder, qType: 'folder' });
  await app.setScript("LOAD * FROM [lib://data/movies.csv] (txt, utf8, embedded labels, delimiter is ',');");
  out.reloaded = await app.doReload();
  const cube = await app.createSessionObject(movieCube);
  const layout = await cube.getLayout();
  out.movies = cubeColumn(layout);
  out.size = layout.qHyperCube.qSize;
  let changed = 0;
  cube.on('changed', () => { changed += 1; });
  // A failing reload keeps the data and says where it stopped.
  await app.setScript('LOAD * FROM [lib://data/movies.csv]\n  (txt, utf8 embedded labels);');
  out.badReload = await app.doReload();
  out.badProgress = (await global.getProgress(0)).qErrorData;
  out.badSyntax = await app.checkScriptSyntax();
  out.changedAfterBad = changed;
  out.moviesAfterBad = cubeColumn(await cube.getLayout());
  // A good reload tells the open objects that they changed.
  await app.setScript("LOAD Movie FROM [lib://data/movies.csv] (txt, utf8, embedded labels, delimiter is ',') WHERE Year > 2000;");
  out.secondReload = await app.doReload();
  out.changedAfterGood = changed;
  out.moviesAfterGood = cubeColumn(await cube.getLayout());
  out.script = await app.getScript();
  out.appLayout = await app.getAppLayout();
  out.connections = await app.getConnections();
  try {
    await app.createConnection({ qName: 'data', qConnectionString: folder, qType: 'folder' });
  } catch (err) {
    out.duplicate = err.code;
  }
  await session.close();
}

// enigma.js examples/data/list-object: AutoGenerate, RecNo() and Rand(), CreateObject.
async function listObject(out) {
  const session = open('/app/engineData');
  const global = await session.open();
  const doc = await global.createSessionApp();
  await doc.setScript('\nTempTable:\nLoad\nRecNo() as ID,\nRand() as Value\nAutoGenerate 100\n');
  out.listReloaded = await doc.doReload();
  const list = await doc.createObject({
    qInfo: { qType: 'my-list-object' },
    qListObjectDef: {
      qDef: { qFieldDefs: ['Value'], qSortCriterias: [{ qSortByLoadOrder: 1 }] },
      qShowAlternatives: true,
      qInitialDataFetch: [{ qTop: 0, qHeight: 3, qLeft: 0, qWidth: 1 }],
    },
  });
  const before = await list.getLayout();
  out.listInfo = before.qInfo;
  out.listBefore = before.qListObject.qDimensionInfo.qStateCounts;
  out.listValues = before.qListObject.qDataPages[0].qMatrix.map((row) => row[0].qNum);
  await list.selectListObjectValues('/qListObjectDef', [0], false);
  const after = await list.getLayout();
  out.listAfter = after.qListObject.qDimensionInfo.qStateCounts;
  out.listStates = after.qListObject.qDataPages[0].qMatrix.map((row) => row[0].qState);
  const tk = await doc.getTablesAndKeys({ qcx: 1000, qcy: 1000 }, { qcx: 0, qcy: 0 }, 30, true, false);
  out.listTables = tk.qtr.map((t) => [t.qName, t.qNoOfRows]);
  await session.close();
}

function halyardTable(path, name, fields) {
  const halyard = new Halyard();
  halyard.addTable(new Halyard.Table(path, { name, fields, delimiter: ',' }));
  return halyard;
}

// core-get-started hello-data-halyard: the halyard.js enigma mixin makes the session app.
async function halyardFlow(out) {
  const fields = [{ src: 'Movie', name: 'Movie' }, { src: 'Year', name: 'Year' }];
  const halyard = halyardTable(`${folder}/movies.csv`, 'Movies', fields);
  out.halyardScript = halyard.getScript();
  const session = open('', halyardMixin);
  const global = await session.open();
  const app = await global.createSessionAppUsingHalyard(halyard);
  const cube = await app.createSessionObject(movieCube);
  out.halyardMovies = cubeColumn(await cube.getLayout());
  await session.close();

  const errors = {};
  for (const [key, table] of [
    ['missing', halyardTable(`${folder}/no-such-file.csv`, 'Missing', fields)],
    ['syntax', halyardTable(`${folder}/movies.csv`, 'Broken', [{ expr: 'Upper(Movie', name: 'M' }])],
  ]) {
    const s = open('', halyardMixin);
    const g = await s.open();
    try {
      await g.createSessionAppUsingHalyard(table);
      errors[key] = null;
    } catch (err) {
      errors[key] = { type: err.type, message: err.message, item: err.item ? err.item.getName() : null };
    }
    await s.close();
  }
  out.halyardErrors = errors;
}

// halyard.js's enigma mixin with stored apps: createAppUsingHalyard makes the app (CreateApp,
// OpenDoc, reload, DoSave); reloadAppUsingHalyard opens it by name from another session and
// reloads it with another script.
async function halyardStored(out) {
  const name = 'Movies built by halyard';
  const fields = [{ src: 'Movie', name: 'Movie' }, { src: 'Year', name: 'Year' }];
  let session = open('', halyardMixin);
  let global = await session.open();
  const app = await global.createAppUsingHalyard(name, halyardTable(`${folder}/movies.csv`, 'Movies', fields));
  out.storedLayout = await app.getAppLayout();
  const cube = await app.createSessionObject(movieCube);
  out.storedMovies = cubeColumn(await cube.getLayout());
  await session.close();

  session = open('', halyardMixin);
  global = await session.open();
  const films = halyardTable(`${folder}/movies.csv`, 'Films', [{ src: 'Movie', name: 'Film' }]);
  const again = await global.reloadAppUsingHalyard(name, films, false);
  const filmCube = await again.createSessionObject({
    qInfo: { qType: 'films' },
    qHyperCubeDef: { qDimensions: [{ qDef: { qFieldDefs: ['Film'] } }], qInitialDataFetch: [{ qHeight: 10, qWidth: 1 }] },
  });
  out.storedFilms = cubeColumn(await filmCube.getLayout());
  out.storedTables = (await again.getTablesAndKeys({ qcx: 1000, qcy: 1000 }, { qcx: 0, qcy: 0 }, 30, true, false))
    .qtr.map((t) => t.qName);
  try {
    await global.createApp(name);
    out.storedDuplicate = null;
  } catch (err) {
    out.storedDuplicate = err.code;
  }
  out.storedDocs = (await global.getDocList()).filter((d) => d.qDocName === name).map((d) => d.qDocId);
  await session.close();
}

// core-get-started hello-data-halyard as written: schema 3.2, a date field read with Date#.
async function helloDataHalyard(out) {
  const halyard = new Halyard();
  halyard.addTable(new Halyard.Table(`${folder}/schrimp.csv`, {
    name: 'Shrimps',
    fields: [
      { src: 'date', name: 'Date', type: 'date', inputFormat: 'YYYYMMDD' },
      { src: 'kilo', name: 'Kilos' },
    ],
    delimiter: ',',
  }));
  const session = enigma.create({
    schema: schema32,
    mixins: halyardMixin,
    url: `${base}/app/`,
    createSocket: (url) => new WebSocket(url),
  });
  const qix = await session.open();
  const app = await qix.createSessionAppUsingHalyard(halyard);
  const object = await app.createSessionObject({
    qInfo: { qType: 'hello-data' },
    qHyperCubeDef: {
      qDimensions: [{ qDef: { qFieldDefs: ['Date'] } }],
      qInitialDataFetch: [{ qHeight: 10, qWidth: 1 }],
    },
  });
  const layout = await object.getLayout();
  out.shrimpDates = layout.qHyperCube.qDataPages[0].qMatrix.map((row) => [row[0].qText, row[0].qNum]);
  await session.close();
}

async function main() {
  const out = {};
  await helloData(out);
  await listObject(out);
  await halyardFlow(out);
  await halyardStored(out);
  await helloDataHalyard(out);
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(`${err.stack || JSON.stringify(err)}\n`);
  process.exit(1);
});
