// compare_qix.py's select + layouts step made by the client front-ends use: enigma.js (delta
// answers, its default) over the `ws` package, from the packages `npm ci` installs in tests/.
//   node benchmarks/qix_enigma_steps.js <tests dir> <ws url> <app id> <list props> <cube props> <ks>
// ks: a JSON list of the customers to select, one step each. A step selects one through the
// list object, then asks both layouts at once, as a page does on the select's change notices.
// Prints a JSON list of each step's milliseconds, from the select sent to the last layout read.
const path = require('path');

const [tests, url, appId, listJson, cubeJson, ksJson] = process.argv.slice(2);
const modules = path.join(tests, 'node_modules');
const enigma = require(path.join(modules, 'enigma.js'));
const schema = require(path.join(modules, 'enigma.js', 'schemas', '12.2027.0.json'));
const WebSocket = require(path.join(modules, 'ws'));

async function main() {
  const listProps = JSON.parse(listJson);
  const rows = listProps.qListObjectDef.qInitialDataFetch[0].qHeight;
  const session = enigma.create({ schema, url, createSocket: (u) => new WebSocket(u) });
  const global = await session.open();
  const doc = await global.openDoc(appId);
  const listbox = await doc.createSessionObject(listProps);
  const cube = await doc.createSessionObject(JSON.parse(cubeJson));
  await Promise.all([listbox.getLayout(), cube.getLayout()]);
  const times = [];
  for (const k of JSON.parse(ksJson)) {
    const start = process.hrtime.bigint();
    await listbox.selectListObjectValues('/qListObjectDef', [k], false);
    const [listLayout, cubeLayout] = await Promise.all([listbox.getLayout(), cube.getLayout()]);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    const matrix = listLayout.qListObject.qDataPages[0].qMatrix;
    if (matrix.length !== rows) throw new Error(`the list page has ${matrix.length} rows`);
    const selected = matrix.filter((row) => row[0].qState === 'S').map((row) => row[0].qElemNumber);
    if (selected.length !== 1 || selected[0] !== k) throw new Error(`selected ${selected}, not ${k}`);
    if (cubeLayout.qHyperCube.qSize.qcy !== 1) throw new Error('the cube should have one row');
  }
  await session.close();
  process.stdout.write(JSON.stringify(times));
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
