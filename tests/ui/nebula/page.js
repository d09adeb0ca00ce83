// Renders the six charts against the engine named in the query string and records, for the
// test, every JSON-RPC message (window.qix.traffic), every error answer (window.qix.errors)
// and each chart's render outcome (window.qix.charts). Sets body[data-ready] when all settled.
/* global enigma, stardust */

const query = new URLSearchParams(location.search);
const qix = { traffic: [], errors: [], charts: {} };
window.qix = qix;

// What each chart is asked to draw: the dimensions and measures of an Orders-like model.
export const CHARTS = [
  { type: 'barchart', module: 'sn-bar-chart', fields: ['Customer', '=Sum(Amount)'] },
  { type: 'piechart', module: 'sn-pie-chart', fields: ['Region', '=Sum(Amount)'] },
  { type: 'kpi', module: 'sn-kpi', fields: ['=Sum(Amount)'] },
  { type: 'table', module: 'sn-table', fields: ['Customer', 'Region', '=Sum(Amount)'] },
  { type: 'pivot-table', module: 'sn-pivot-table', fields: ['Region', 'Customer', '=Sum(Amount)'] },
  { type: 'filterpane', module: 'sn-filter-pane', fields: ['Region', 'Customer'] },
];

async function main() {
  const schema = await (await fetch('/vendor/enigma.js/schemas/12.170.2.json')).json();
  const session = enigma.create({ schema, url: query.get('ws') });
  session.on('traffic:sent', (message) => qix.traffic.push({ dir: 'sent', message }));
  session.on('traffic:received', (message) => {
    qix.traffic.push({ dir: 'received', message });
    if (message.error) {
      const request = qix.traffic.find((t) => t.dir === 'sent' && t.message.id === message.id);
      qix.errors.push({ request: request && request.message, error: message.error });
    }
  });
  const global = await session.open();
  const app = await global.openDoc(query.get('app'));
  const n = stardust.embed(app, {
    types: CHARTS.map(({ type, module }) => ({ name: type, load: async () => window[module] })),
  });
  window.nebula = n;
  try {
    (await n.selections()).mount(document.getElementById('toolbar'));
  } catch (error) {
    qix.charts.toolbar = { ok: false, error: String(error) };
  }
  await Promise.all(
    CHARTS.map(async ({ type, fields }) => {
      try {
        const viz = await n.render({
          element: document.getElementById(type),
          type,
          fields,
          options: { renderer: 'svg' },
        });
        qix.charts[type] = { ok: true, id: viz.id };
      } catch (error) {
        qix.charts[type] = { ok: false, error: String(error && (error.message || error)) };
        document.getElementById(type).textContent = `${type} did not render: ${qix.charts[type].error}`;
      }
    }),
  );
}

main()
  .catch((error) => {
    qix.fatal = String(error && (error.stack || error.message || error));
  })
  .finally(() => {
    document.body.dataset.ready = '1';
  });
