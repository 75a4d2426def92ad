/* The "paste your code" page: devicekit-lint in the browser, run by Pyodide from this site's own assets
 * (assets/pyodide/, assets/devicelint/sources.json; see tools/lint_page_hooks.py). Loaded by that page only. */
(function () {
  "use strict";
  const root = document.querySelector(".dk-lint");
  if (!root) return;
  const lang = root.dataset.lang === "zh" ? "zh" : "en";
  const assets = new URL(".", document.currentScript.src).href;
  const input = root.querySelector(".dk-lint__input");
  const output = root.querySelector(".dk-lint__output");
  const status = root.querySelector(".dk-lint__status");
  const text = {
    en: { loading: "Loading Python in your browser (the first time takes a few seconds)…", running: "Linting…",
          clean: "No device problem found. (The linter only reports what the code shows.)",
          missing: "The in-browser linter is not bundled with this build of the site. Run devicekit-lint on your machine instead.",
          failed: "The in-browser linter could not start: ", syntax: "This code does not parse: " },
    zh: { loading: "正在浏览器里加载 Python（第一次需要几秒钟）……", running: "正在检查……",
          clean: "没有发现设备问题。（检查器只报告代码本身能说明的问题。）",
          missing: "这个版本的网站没有附带浏览器内的检查器，请在你的电脑上运行 devicekit-lint。",
          failed: "浏览器内的检查器无法启动：", syntax: "这段代码无法解析：" },
  }[lang];
  let ready = null;

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = () => reject(new Error("missing " + src));
      document.head.appendChild(script);
    });
  }

  function start() {
    if (ready) return ready;
    ready = (async () => {
      const probe = await fetch(assets + "pyodide/pyodide.js", { method: "HEAD" });
      if (!probe.ok) throw new Error("not-bundled");
      await loadScript(assets + "pyodide/pyodide.js");
      const pyodide = await window.loadPyodide({ indexURL: assets + "pyodide/" });
      const sources = await (await fetch(assets + "devicelint/sources.json")).json();
      for (const [path, source] of Object.entries(sources)) {
        const full = "/home/pyodide/dk/" + path;
        pyodide.FS.mkdirTree(full.slice(0, full.lastIndexOf("/")));
        pyodide.FS.writeFile(full, source);
      }
      pyodide.runPython([
        "import json, sys",
        "sys.path.insert(0, '/home/pyodide/dk')",
        "from devicekit.lint import lint_source",
        "def dk_lint(code, lang):",
        "    try:",
        "        found = lint_source(code, '<pasted>', notebook=True)",
        "    except SyntaxError as exc:",
        "        return json.dumps({'error': f'{exc.msg} (line {exc.lineno})'})",
        "    return json.dumps([{'line': f.line, 'col': f.col, 'code': f.code, 'message': f.message(lang)}",
        "                       for f in found], ensure_ascii=False)",
      ].join("\n"));
      return pyodide;
    })();
    ready.catch(() => { ready = null; });
    return ready;
  }

  function show(items) {
    output.replaceChildren();
    const list = document.createElement("ul");
    for (const item of items) {
      const li = document.createElement("li");
      const where = document.createElement("code");
      where.textContent = `${item.line}:${item.col} ${item.code}`;
      const anchor = document.createElement("a");
      anchor.href = `../lint/#${item.code.toLowerCase()}`;
      anchor.append(where);
      li.append(anchor, " ", item.message);
      list.append(li);
    }
    output.append(list);
  }

  async function run() {
    status.textContent = ready ? text.running : text.loading;
    output.replaceChildren();
    try {
      const pyodide = await start();
      const result = JSON.parse(pyodide.globals.get("dk_lint")(input.value, lang));
      if (result.error) {
        status.textContent = text.syntax + result.error;
      } else if (result.length === 0) {
        status.textContent = text.clean;
      } else {
        status.textContent = "";
        show(result);
      }
    } catch (error) {
      status.textContent = error.message === "not-bundled" ? text.missing : text.failed + error.message;
    }
  }

  root.querySelector(".dk-lint__run").addEventListener("click", run);
  root.querySelector(".dk-lint__clear").addEventListener("click", () => {
    input.value = "";
    output.replaceChildren();
    status.textContent = "";
  });
})();
