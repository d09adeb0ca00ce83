// The app explorer: the list of apps, and for one app its data model, list boxes, the current
// selections and a chart, all through QIX on the server that served the page.
import { Qix, qixUrl } from "./qix.js";

const LISTBOX_ROWS = 500;
const CUBE_ROWS = 1000;
const FIRST_LISTBOXES = 3;

const $ = (selector) => document.querySelector(selector);
let current = null; // the open app: { qix, doc, appId, listboxes: Map(field -> {handle, element}), cube }

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function showError(error) {
  const box = $("#error");
  box.textContent = error ? String(error.message || error) : "";
  box.hidden = !error;
}

// ---- the list of apps ----------------------------------------------------------------------

async function showApps() {
  closeApp();
  $("#app-view").hidden = true;
  $("#apps-view").hidden = false;
  $("#app-title").textContent = "";
  const response = await fetch("/v1/apps");
  if (!response.ok) throw new Error(`GET /v1/apps answered ${response.status}`);
  const apps = await response.json();
  const body = $("#apps tbody");
  body.replaceChildren(
    ...apps.map((app) => {
      const a = app.attributes;
      return element(
        "tr",
        { "data-app-id": a.id },
        element("td", {}, element("a", { href: `#app=${encodeURIComponent(a.id)}` }, a.name || a.id)),
        element("td", { class: "id" }, a.id),
        element("td", {}, a.lastReloadTime || ""),
      );
    }),
  );
  $("#no-apps").hidden = apps.length > 0;
  document.body.dataset.view = "apps";
}

// ---- one app -------------------------------------------------------------------------------

function closeApp() {
  if (current) current.qix.close();
  current = null;
}

async function openApp(appId) {
  closeApp();
  const qix = new Qix(qixUrl(appId));
  await qix.open();
  qix.onclose = () => showError(new Error("the connection to the engine closed; reload the page"));
  const opened = await qix.call(-1, "OpenDoc", appId);
  const doc = opened.qReturn.qHandle;
  current = { qix, doc, appId, listboxes: new Map(), cube: null };
  const layout = await qix.call(doc, "GetAppLayout");
  $("#app-title").textContent = layout.qLayout.qTitle || appId;
  $("#apps-view").hidden = true;
  $("#app-view").hidden = false;
  $("#listboxes").replaceChildren();
  $("#cube").replaceChildren();

  const model = await qix.call(doc, "GetTablesAndKeys", { qcx: 0, qcy: 0 }, { qcx: 0, qcy: 0 }, 0, true, false);
  drawModel(model.qtr, model.qk);
  const fields = [];
  const tags = new Map();
  for (const table of model.qtr) {
    for (const field of table.qFields) {
      if (!field.qIsSynthetic && !fields.includes(field.qName)) fields.push(field.qName);
      tags.set(field.qName, field.qTags);
    }
  }
  fillCubeForm(fields, tags);
  for (const field of fields.slice(0, FIRST_LISTBOXES)) await addListBox(field, false);
  await refresh();
}

function drawModel(tables, keys) {
  const model = $("#model");
  const svg = $("#links");
  model.replaceChildren(svg);
  const keyFields = new Set(keys.flatMap((k) => k.qKeyFields));
  for (const table of tables) {
    const classes = ["model-table"];
    const marks = [];
    if (table.qIsSynthetic) { classes.push("synthetic"); marks.push("synthetic key table"); }
    if (table.qLoose) { classes.push("loose"); marks.push("loose"); }
    const title = element("h3", {}, table.qName, element("span", { class: "rows" }, `${table.qNoOfRows.toLocaleString()} rows`));
    for (const mark of marks) title.append(element("span", { class: "mark" }, mark));
    const list = element("ul");
    for (const field of table.qFields) {
      const item = element("li", { "data-field": field.qName, title: `${field.qnTotalDistinctValues} distinct values` }, field.qName);
      if (keyFields.has(field.qName)) item.classList.add("key");
      if (!field.qIsSynthetic) item.addEventListener("click", () => addListBox(field.qName).catch(showError));
      list.append(item);
    }
    model.append(element("div", { class: classes.join(" "), "data-table": table.qName }, title, list));
  }
  requestAnimationFrame(() => drawLinks(keys));
  window.onresize = () => drawLinks(keys);
}

// Lines between the rows of a key field in the tables it links.
function drawLinks(keys) {
  const svg = $("#links");
  const origin = $("#model").getBoundingClientRect();
  const lines = [];
  for (const key of keys) {
    const field = key.qKeyFields[0];
    // A synthetic key fans out from its own table; other keys from the first table.
    const tables = [...key.qTables].sort((x, y) => y.startsWith("$Syn ") - x.startsWith("$Syn "));
    const anchors = tables
      .map((table) => document.querySelector(`.model-table[data-table="${CSS.escape(table)}"] li[data-field="${CSS.escape(field)}"]`))
      .filter(Boolean);
    for (let i = 1; i < anchors.length; i++) {
      const line = document.createElementNS("http://www.w3.org/2000/svg", "line");
      const [x1, y1, x2, y2] = linkEnds(anchors[0], anchors[i]);
      line.setAttribute("x1", x1 - origin.left);
      line.setAttribute("y1", y1 - origin.top);
      line.setAttribute("x2", x2 - origin.left);
      line.setAttribute("y2", y2 - origin.top);
      line.dataset.key = field;
      lines.push(line);
    }
  }
  svg.replaceChildren(...lines);
}

// Side by side: from one field row's edge to the other's. One above the other: from the
// bottom of the upper table to the top of the lower one.
function linkEnds(itemA, itemB) {
  const [a, b] = [itemA.getBoundingClientRect(), itemB.getBoundingClientRect()];
  if (a.right < b.left || b.right < a.left) {
    const leftToRight = a.right < b.left;
    return [leftToRight ? a.right : a.left, a.top + a.height / 2, leftToRight ? b.left : b.right, b.top + b.height / 2];
  }
  const [boxA, boxB] = [itemA.closest(".model-table").getBoundingClientRect(), itemB.closest(".model-table").getBoundingClientRect()];
  const x = (Math.max(boxA.left, boxB.left) + Math.min(boxA.right, boxB.right)) / 2;
  return boxA.top < boxB.top ? [x, boxA.bottom, x, boxB.top] : [x, boxA.top, x, boxB.bottom];
}

// ---- list boxes ----------------------------------------------------------------------------

async function addListBox(field, render = true) {
  if (!current || current.listboxes.has(field)) return;
  const { qix, doc } = current;
  const definition = {
    qInfo: { qType: "listbox" },
    qListObjectDef: {
      qDef: { qFieldDefs: [field], qSortCriterias: [{ qSortByNumeric: 1, qSortByAscii: 1 }] },
      qShowAlternatives: true,
      qInitialDataFetch: [{ qTop: 0, qLeft: 0, qWidth: 1, qHeight: LISTBOX_ROWS }],
    },
  };
  const created = await qix.call(doc, "CreateSessionObject", definition);
  const box = element("section", { class: "listbox", "data-field": field },
    element("h3", {}, field, element("span", { class: "counts" })), element("ul"));
  $("#listboxes").append(box);
  current.listboxes.set(field, { handle: created.qReturn.qHandle, element: box });
  if (render) await refresh();
}

async function drawListBox(field, listbox) {
  const { handle, element: box } = listbox;
  const layout = (await current.qix.call(handle, "GetLayout")).qLayout.qListObject;
  const rows = layout.qDataPages.length ? layout.qDataPages[0].qMatrix : [];
  const counts = layout.qDimensionInfo.qStateCounts;
  box.querySelector(".counts").textContent = `${counts.qSelected} of ${layout.qSize.qcy}`;
  const items = rows.map(([cell]) => element(
    "li",
    {
      "data-state": cell.qState,
      "data-value": cell.qText,
      "data-elem": cell.qElemNumber,
      title: cell.qText,
      onclick: () => toggle(handle, cell.qElemNumber).catch(showError),
    },
    cell.qText,
  ));
  if (layout.qSize.qcy > rows.length) {
    items.push(element("li", { class: "more" }, `… ${layout.qSize.qcy - rows.length} more`));
  }
  box.querySelector("ul").replaceChildren(...items);
  return rows.filter(([cell]) => cell.qState === "S" || cell.qState === "XS").map(([cell]) => cell.qText);
}

async function toggle(handle, elemNumber) {
  await current.qix.call(handle, "SelectListObjectValues", "/qListObjectDef", [elemNumber], true);
  await refresh();
}

function drawSelections(selected) {
  const chips = [];
  for (const [field, values] of selected) {
    if (!values.length) continue;
    const { handle } = current.listboxes.get(field);
    const clear = element("button", { type: "button", title: `clear ${field}`, "aria-label": `clear ${field}` }, "×");
    clear.addEventListener("click", async () => {
      await current.qix.call(handle, "ClearSelections", "/qListObjectDef");
      await refresh();
    });
    chips.push(element("span", { class: "chip", "data-field": field }, `${field}: ${values.join(", ")}`, clear));
  }
  $("#selection-chips").replaceChildren(...(chips.length ? chips : [element("span", { class: "none" }, "none")]));
}

// ---- the chart -----------------------------------------------------------------------------

// Starts the chart on a text field by the sum of a numeric one, when the app has them.
function fillCubeForm(fields, tags) {
  const has = (field, tag) => (tags.get(field) || []).includes(tag);
  const plain = fields.filter((f) => !has(f, "$key"));
  const dimension = plain.find((f) => has(f, "$text")) || fields[0];
  const numeric = [...plain].reverse().find((f) => has(f, "$numeric"));
  const options = (selected) => fields.map((f) => {
    const option = element("option", { value: f }, f);
    option.selected = f === selected;
    return option;
  });
  $("#dimension").replaceChildren(...options(dimension));
  $("#measure-field").replaceChildren(...options(numeric || fields[fields.length - 1]));
  $("#measure-function").value = numeric ? "Sum" : "Count";
}

// The chosen measure as an expression and as its label.
function measure() {
  const fn = $("#measure-function").value;
  const name = $("#measure-field").value;
  const field = `[${name.replaceAll("]", "]]")}]`;
  if (fn === "Count distinct") return { expression: `Count(distinct ${field})`, label: `Count(distinct ${name})` };
  return { expression: `${fn}(${field})`, label: `${fn}(${name})` };
}

async function makeCube() {
  const { qix, doc } = current;
  if (current.cube) await qix.call(doc, "DestroySessionObject", current.cube.id);
  const definition = {
    qInfo: { qType: "chart" },
    qHyperCubeDef: {
      qDimensions: [{ qDef: { qFieldDefs: [$("#dimension").value] } }],
      qMeasures: [{ qDef: { qDef: measure().expression, qLabel: measure().label } }],
      qInitialDataFetch: [{ qTop: 0, qLeft: 0, qWidth: 2, qHeight: CUBE_ROWS }],
    },
  };
  const created = await qix.call(doc, "CreateSessionObject", definition);
  current.cube = { handle: created.qReturn.qHandle, id: created.qReturn.qGenericId };
}

async function drawCube() {
  if (!current.cube) await makeCube();
  const cube = (await current.qix.call(current.cube.handle, "GetLayout")).qLayout.qHyperCube;
  const target = $("#cube");
  if (cube.qError) {
    target.replaceChildren(element("p", { class: "cube-error" }, `cannot compute: error ${cube.qError.qErrorCode}`));
    return;
  }
  const rows = cube.qDataPages.length ? cube.qDataPages[0].qMatrix : [];
  const dimension = cube.qDimensionInfo[0].qFallbackTitle;
  const measure = cube.qMeasureInfo[0].qFallbackTitle;
  const total = cube.qGrandTotalRow.length ? cube.qGrandTotalRow[0].qText : "";
  target.dataset.rows = cube.qSize.qcy;
  if (document.querySelector('input[name="view"]:checked').value === "bars") {
    const numbers = rows.map((row) => (typeof row[1].qNum === "number" ? row[1].qNum : 0));
    const top = Math.max(0, ...numbers) || 1;
    target.replaceChildren(element("div", { class: "bars" }, ...rows.map((row, i) => {
      const bar = element("div", { class: "bar" });
      bar.style.width = `${Math.max(0, (100 * numbers[i]) / top)}%`;
      return element("div", { class: "bar-row", "data-value": row[0].qText },
        element("span", { class: "label", title: row[0].qText }, row[0].qText), bar,
        element("span", { class: "value" }, row[1].qText));
    })));
    return;
  }
  const table = element("table", { class: "cube" },
    element("thead", {}, element("tr", {}, element("th", {}, dimension), element("th", { class: "num" }, measure))),
    element("tbody", {}, ...rows.map((row) => element("tr", { "data-value": row[0].qText },
      element("td", {}, row[0].qText), element("td", { class: "num" }, row[1].qText)))),
    element("tfoot", {}, element("tr", {}, element("td", {}, "Total"), element("td", { class: "num", "data-total": "" }, total))));
  target.replaceChildren(table);
}

// ---- updates -------------------------------------------------------------------------------

let generation = 0;

// Draws every list box, the selections bar and the chart from the engine's current state.
async function refresh() {
  document.body.dataset.busy = "1";
  try {
    const selected = [];
    for (const [field, listbox] of current.listboxes) selected.push([field, await drawListBox(field, listbox)]);
    drawSelections(selected);
    await drawCube();
    showError(null);
  } finally {
    generation += 1;
    document.body.dataset.generation = String(generation);
    delete document.body.dataset.busy;
  }
}

async function route() {
  const match = /^#app=(.+)$/.exec(location.hash);
  try {
    if (match) {
      const appId = decodeURIComponent(match[1]);
      delete document.body.dataset.app;
      await openApp(appId);
      document.body.dataset.view = "app";
      document.body.dataset.app = appId; // the app shown, once drawn
    } else {
      await showApps();
    }
  } catch (error) {
    showError(error);
  }
}

$("#clear-all").addEventListener("click", async () => {
  await current.qix.call(current.doc, "ClearAll", false);
  await refresh();
});
for (const id of ["#dimension", "#measure-function", "#measure-field"]) {
  $(id).addEventListener("change", async () => {
    try { await makeCube(); await refresh(); } catch (error) { showError(error); }
  });
}
for (const radio of document.querySelectorAll('input[name="view"]')) {
  radio.addEventListener("change", () => drawCube().catch(showError));
}
window.addEventListener("hashchange", route);
route();
