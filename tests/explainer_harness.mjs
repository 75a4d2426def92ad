// Runs the widget's pure explain() (docs/assets/explainer.js) under node for tests/test_browser.py.
// stdin: {"catalog": <the widget JSON>, "texts": [str, ...]}
// stdout: [{"family", "devices", "message", "en", "zh", "title_en", "title_zh", "lab", "lesson"}, ...]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const widget = require("../docs/assets/explainer.js");

const input = JSON.parse(readFileSync(0, "utf8"));
const out = input.texts.map((text) => {
  const r = widget.explain(input.catalog, text);
  return {
    family: r.family,
    devices: r.devices,
    message: r.message,
    en: r.en,
    zh: r.zh,
    title_en: r.title_en,
    title_zh: r.title_zh,
    lab: r.lab,
    lesson: r.lesson,
  };
});
process.stdout.write(JSON.stringify(out));
