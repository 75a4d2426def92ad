/*
 * The error explainer on the atlas page: paste a traceback, get the family, the devices, the cause and
 * the fix. It is devicekit.explain (src/devicekit/explain.py) rewritten in JavaScript, rule for rule,
 * over the same catalog: assets/devicekit-catalog.json, generated at build time from
 * src/devicekit/catalog.json by course_tools/generate/atlas.py. tests/test_browser.py runs this file under node and
 * checks that it agrees with Python on every example message in the catalog.
 *
 * Everything happens in the browser. The only request is for the catalog JSON next to this script (same
 * site); pasted text is never sent anywhere and is only ever shown through textContent.
 *
 * Structure: explain(catalog, text) is pure (no DOM) and is exported under node; install() is the DOM glue.
 */
(function (factory) {
  "use strict";
  var api = factory();
  if (typeof module !== "undefined" && module.exports) {
    module.exports = api;
  }
  if (typeof window !== "undefined" && typeof document !== "undefined") {
    api.install(window, document);
  }
})(function () {
  "use strict";

  // Longest text examined (explain.py: _MAX_CHARS); a pasted log can be huge, the error is at its end.
  var MAX_CHARS = 200000;

  // Python's str.isspace() characters, which is what \s, str.strip() and str.split() use in explain.py.
  var SP = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  // Python's \w on str patterns: letters, digits and the underscore, in any script.
  var W = "\\p{L}\\p{N}_";
  var EXC_LINE = new RegExp(
    "^[" + SP + "]*(?:E[" + SP + "]+)?(?:\\[rank\\p{Nd}+\\]:[" + SP + "]*)?" +
      "(?:[A-Za-z_][" + W + "]*\\.)*[A-Za-z_][" + W + "]*" +
      "(?:Error|Exception|Warning|Exit|Interrupt|Failure)[" + SP + "]*:",
    "u"
  );
  var STOP_LINE = new RegExp(
    "^[" + SP + "]*(?:\\[rank\\p{Nd}+\\]:[" + SP + "]*)?(?:Traceback \\(most recent call last\\)" +
      "|During handling of the above exception|The above exception was the direct cause|File \")",
    "u"
  );
  var SPACES = new RegExp("[" + SP + "]+", "gu");
  var EDGES = new RegExp("^[" + SP + "]+|[" + SP + "]+$", "gu");
  // str.splitlines() boundaries.
  var LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
  var OPTIONAL = /\[\[([\s\S]*?)\]\]/g;
  var PLACEHOLDERS = ["{devices}", "{first}", "{second}"];

  function strip(text) {
    return text.replace(EDGES, "");
  }

  function collapse(text) {
    return strip(text.replace(SPACES, " "));
  }

  function codePoints(text) {
    return Array.from(text).length;
  }

  function has(obj, key) {
    return obj != null && Object.prototype.hasOwnProperty.call(obj, key);
  }

  function replaceAll(text, key, value) {
    return text.split(key).join(value);
  }

  // --- the catalog, compiled once per catalog object ---------------------------------------------

  // "u": code points, not UTF-16 halves, as in Python. \w, \b and \d stay ASCII in JavaScript even
  // with "u"; devicekit.catalog compiles the same regexes with re.ASCII, so both read Chinese text
  // around a device name ("在cuda:0上") alike. Three things still differ and are rewritten by pythonic():
  // with "iu" JavaScript folds non-ASCII look-alikes ("ſ" matches s, the Kelvin sign "K" matches k) where
  // re.ASCII | re.IGNORECASE folds ASCII letters only, so "i" becomes [aA]-style classes; JavaScript's \s
  // also matches U+FEFF, U+00A0 and the other Unicode spaces, re.ASCII's only [ \t\n\r\f\v]; and "." does
  // not match \r, U+2028 or U+2029 in JavaScript, in Python everything but \n.
  var ASCII_SPACE = "\\t\\n\\v\\f\\r ";

  function swapCase(ch) {
    var lower = ch.toLowerCase();
    return lower === ch ? ch.toUpperCase() : lower;
  }

  function isAsciiLetter(ch) {
    return /^[A-Za-z]$/.test(ch);
  }

  // The source of a catalog regex rewritten so that JavaScript ("u" flag, no "i") matches what Python's
  // re.compile(source, re.ASCII [| re.IGNORECASE]) matches. It walks the source once: escapes are copied
  // whole (\x41, \u{...}, \p{...}), except \s and \S; inside a character class each ASCII letter (and
  // each range of them) gets its other case; outside one, a letter becomes [aA] and "." becomes [^\n].
  function pythonic(source, caseless) {
    var out = "";
    var inClass = false;
    var i = 0;
    while (i < source.length) {
      var ch = source[i];
      if (ch === "\\") {
        var next = source[i + 1];
        var length = 2;
        if (next === "x") {
          length = 4;
        } else if (next === "u" && source[i + 2] === "{") {
          length = source.indexOf("}", i) - i + 1;
        } else if (next === "u") {
          length = 6;
        } else if ((next === "p" || next === "P") && source[i + 2] === "{") {
          length = source.indexOf("}", i) - i + 1;
        } else if (next === "c") {
          length = 3;
        }
        if (next === "s") {
          out += inClass ? ASCII_SPACE : "[" + ASCII_SPACE + "]";
        } else if (next === "S" && !inClass) {
          out += "[^" + ASCII_SPACE + "]";
        } else if (next === "S") {
          throw new Error("\\S inside a character class has no ASCII rewrite: " + source);
        } else {
          out += source.substr(i, length);
        }
        i += length;
        continue;
      }
      if (inClass) {
        if (ch === "]") {
          inClass = false;
          out += ch;
        } else if (caseless && source[i + 1] === "-" && source[i + 2] && source[i + 2] !== "]") {
          var last = source[i + 2];
          out += ch + "-" + last;
          for (var code = ch.charCodeAt(0); code <= last.charCodeAt(0); code++) {
            var letter = String.fromCharCode(code);
            if (isAsciiLetter(letter)) {
              out += swapCase(letter);
            }
          }
          i += 3;
          continue;
        } else {
          out += caseless && isAsciiLetter(ch) ? ch + swapCase(ch) : ch;
        }
        i += 1;
        continue;
      }
      if (ch === "[") {
        inClass = true;
        out += ch;
        if (source[i + 1] === "^") {
          out += "^";
          i += 1;
        }
        if (source[i + 1] === "]") {
          out += "\\]";
          i += 1;
        }
      } else if (ch === ".") {
        out += "[^\\n]";
      } else if (ch === "(" && source[i + 1] === "?") {
        // (?: (?= (?! : copy the group's opening whole, it has no letters to fold
        out += source.substr(i, 3);
        i += 3;
        continue;
      } else if (caseless && isAsciiLetter(ch)) {
        out += "[" + ch + swapCase(ch) + "]";
      } else {
        out += ch;
      }
      i += 1;
    }
    return out;
  }

  function compileRegex(source, caseless, flags) {
    return new RegExp(pythonic(source, caseless), "u" + (flags || ""));
  }

  function rx(spec, extraFlags) {
    return compileRegex(spec.regex, spec.flags === "i", extraFlags);
  }

  var compiledCache = typeof WeakMap !== "undefined" ? new WeakMap() : null;

  function compile(catalog) {
    if (compiledCache && compiledCache.has(catalog)) {
      return compiledCache.get(catalog);
    }
    var families = catalog.families.map(function (data) {
      var context = data.context || {};
      return {
        data: data,
        patterns: data.patterns.map(function (p) {
          return { rx: rx(p), spec: p };
        }),
        context: (context.patterns || []).map(function (p) {
          return rx(p);
        }),
        upgrades: context.upgrades || [],
        details: (data.details || []).map(function (d) {
          return { rx: rx(d), spec: d };
        }),
      };
    });
    var byId = {};
    families.forEach(function (f) {
      byId[f.data.id] = f;
    });
    var compiled = {
      families: families,
      byId: byId,
      // "g" to walk every match (finditer), "d" for the start of each group.
      deviceRules: catalog.device_rules.map(function (r) {
        return { rx: rx(r, "gd"), rule: r };
      }),
      hints: ((catalog.not_device || {}).hints || []).map(function (h) {
        return { rx: rx(h), hint: h };
      }),
      catalog: catalog,
    };
    if (compiledCache) {
      compiledCache.set(catalog, compiled);
    }
    return compiled;
  }

  // --- finding the line that matters (explain.py: _candidates) ------------------------------------

  function candidates(text) {
    var lines = text.split(LINE_BREAK);
    var blocks = [];
    var i, j;
    for (i = lines.length - 1; i >= 0; i--) {
      if (!EXC_LINE.test(lines[i])) {
        continue;
      }
      var parts = [lines[i]];
      for (j = i + 1; j < lines.length; j++) {
        var next = lines[j];
        if (!strip(next) || STOP_LINE.test(next) || EXC_LINE.test(next)) {
          break;
        }
        parts.push(next);
      }
      blocks.push(collapse(parts.join(" ")));
    }
    var singles = [];
    for (i = lines.length - 1; i >= 0; i--) {
      if (strip(lines[i])) {
        singles.push(collapse(lines[i]));
      }
    }
    var seen = Object.create(null);
    var ordered = [];
    blocks.concat(singles).forEach(function (cand) {
      if (cand && !seen[cand]) {
        seen[cand] = true;
        ordered.push(cand);
      }
    });
    return ordered;
  }

  // --- devices (explain.py: _rule_devices, _extract_devices, _blank) -------------------------------

  function ruleDevices(match, rule) {
    var found = [];
    rule.devices.forEach(function (spec) {
      var kind = spec.type;
      var name = typeof kind === "number" ? match[kind] : kind;
      if (!name) {
        return;
      }
      name = name.toLowerCase();
      var number = typeof spec.index === "number" ? match[spec.index] : undefined;
      found.push(number != null ? name + ":" + number : name);
    });
    return found;
  }

  function extractDevices(compiled, text) {
    // Characters claimed by earlier rules, marked in a byte array: linear in the length of the text
    // (devicekit.catalog.extract_devices does the same).
    var claimed = new Uint8Array(text.length + 1);
    var hits = [];
    compiled.deviceRules.forEach(function (entry) {
      var regex = entry.rx;
      var match;
      regex.lastIndex = 0;
      while ((match = regex.exec(text)) !== null) {
        var starts = [];
        for (var g = 1; g < match.length; g++) {
          if (match.indices[g]) {
            starts.push(match.indices[g][0]);
          }
        }
        var start = starts.length ? Math.min.apply(null, starts) : match.index;
        var end = match.index + match[0].length;
        if (match[0] === "") {
          regex.lastIndex++;
        }
        if (end <= start || claimed.subarray(start, end).indexOf(1) >= 0) {
          continue;
        }
        claimed.fill(1, start, end);
        hits.push({ start: start, devices: ruleDevices(match, entry.rule) });
      }
    });
    hits.sort(function (a, b) {
      return a.start - b.start;
    });
    var ordered = [];
    hits.forEach(function (hit) {
      hit.devices.forEach(function (device) {
        if (ordered.indexOf(device) < 0) {
          ordered.push(device);
        }
      });
    });
    return ordered;
  }

  function blank(text, pattern) {
    if (!pattern) {
      return text;
    }
    return text.replace(compileRegex(pattern, false, "g"), function (m) {
      return " ".repeat(codePoints(m));
    });
  }

  function deviceType(device) {
    return device.split(":")[0];
  }

  // --- matching (explain.py: _find, _upgrade) ------------------------------------------------------

  function find(compiled, cands) {
    for (var c = 0; c < cands.length; c++) {
      var candidate = cands[c];
      for (var f = 0; f < compiled.families.length; f++) {
        var family = compiled.families[f];
        for (var p = 0; p < family.patterns.length; p++) {
          var spec = family.patterns[p].spec;
          var match = family.patterns[p].rx.exec(candidate);
          if (match === null) {
            continue;
          }
          var split = spec.split;
          if (split) {
            var first = extractDevices(compiled, match[split.groups[0]] || "");
            var second = extractDevices(compiled, match[split.groups[1]] || "");
            var same = !(first.length && second.length) || deviceType(first[0]) === deviceType(second[0]);
            if (same) {
              return { family: compiled.byId[split.when_same_device], candidate: candidate, spec: spec };
            }
          }
          return { family: family, candidate: candidate, spec: spec };
        }
      }
    }
    return null;
  }

  function upgrade(compiled, hit, fullText) {
    for (var f = 0; f < compiled.families.length; f++) {
      var family = compiled.families[f];
      if (family.upgrades.indexOf(hit.family.data.id) < 0) {
        continue;
      }
      var inContext = family.context.some(function (regex) {
        return regex.test(fullText);
      });
      if (inContext) {
        return family;
      }
    }
    return hit.family;
  }

  // --- wording (explain.py: _join, _fill, _details, _compose) --------------------------------------

  function joinDevices(items, words) {
    if (items.length <= 1) {
      return items.join("");
    }
    return items.slice(0, -1).join(words.sep) + words.and + items[items.length - 1];
  }

  function fill(template, devices, words) {
    var values = {
      "{devices}": devices.length ? joinDevices(devices, words) : null,
      "{first}": devices.length ? devices[0] : null,
      "{second}": devices.length > 1 ? devices[1] : null,
    };
    template = template.replace(OPTIONAL, function (_, inner) {
      var missing = PLACEHOLDERS.some(function (key) {
        return inner.indexOf(key) >= 0 && values[key] === null;
      });
      return missing ? "" : inner;
    });
    PLACEHOLDERS.forEach(function (key) {
      var value = values[key] !== null ? values[key] : words[key.slice(1, -1)];
      template = replaceSpaced(template, key, value);
    });
    return template;
  }

  // A Chinese character and an ASCII letter or digit get a space between them (catalog.py: _spaced).
  var HAN = /[\u3400-\u4dbf\u4e00-\u9fff]/;
  var ASCII_WORD = /[A-Za-z0-9]/;

  function replaceSpaced(template, key, value) {
    var out = "";
    var from = 0;
    var at = template.indexOf(key);
    while (at >= 0) {
      var text = value;
      var before = template.charAt(at - 1);
      var after = template.charAt(at + key.length);
      if (text && before && HAN.test(before) && ASCII_WORD.test(text.charAt(0))) {
        text = " " + text;
      }
      if (text && after && HAN.test(after) && ASCII_WORD.test(text.charAt(text.length - 1))) {
        text = text + " ";
      }
      out += template.slice(from, at) + text;
      from = at + key.length;
      at = template.indexOf(key, from);
    }
    return out + template.slice(from);
  }

  function details(family, candidate, lang) {
    for (var d = 0; d < family.details.length; d++) {
      var match = family.details[d].rx.exec(candidate);
      if (match) {
        var text = family.details[d].spec[lang];
        for (var n = 1; n < match.length; n++) {
          text = replaceAll(text, "{" + n + "}", match[n] || "");
        }
        return text;
      }
    }
    return "";
  }

  function parts(compiled, family, devices, candidate, lang) {
    var catalog = compiled.catalog;
    var data = family.data;
    var words = catalog.placeholders[lang];
    var gap = lang === "en" ? " " : "";
    var what = fill(data.cause[lang], devices, words);
    var detail = details(family, candidate, lang);
    if (detail) {
      what = what + gap + detail;
    }
    var notes = [];
    var kinds = [];
    devices.forEach(function (device) {
      var kind = deviceType(device);
      if (kinds.indexOf(kind) < 0) {
        kinds.push(kind);
      }
    });
    kinds.forEach(function (kind) {
      if (has(catalog.device_notes, kind) && (catalog.device_notes[kind].skip || []).indexOf(data.id) < 0) {
        notes.push(catalog.device_notes[kind][lang]);
      }
    });
    return {
      id: data.id,
      title: data.title[lang],
      what: what,
      fix: fill(data.fix[lang], devices, words),
      notes: notes,
      code: data.fix.code || "",
      lab: taught(data, catalog.labels[lang], lang),
      devices: devices,
    };
  }

  // The lessons that teach a family, its "lesson" first (explain.py: _lessons).
  function lessonsOf(data) {
    var listed = data.lessons && data.lessons.length ? data.lessons : data.lesson ? [data.lesson] : [];
    var all = data.lesson ? [data.lesson].concat(listed) : listed.slice();
    return all.filter(function (item, index) {
      return all.indexOf(item) === index;
    });
  }

  // The labs that practise a family, its "lab" first (explain.py: _labs).
  function labsOf(data) {
    var listed = data.labs && data.labs.length ? data.labs : data.lab ? [data.lab] : [];
    var all = data.lab ? [data.lab].concat(listed) : listed.slice();
    return all.filter(function (item, index) {
      return all.indexOf(item) === index;
    });
  }

  // A lesson's or lab's number from its slug: "05-debugging" gives "5" (explain.py: _number).
  function numberOf(slug) {
    var head = slug.split("-")[0];
    return /^[0-9]+$/.test(head) ? String(parseInt(head, 10)) : slug;
  }

  // "lessons 2, 8; labs 2, 8" / "第 2、8 课；实验 2、8" (explain.py: _taught).
  function taught(data, labels, lang) {
    var lessons = lessonsOf(data).map(numberOf);
    var labs = labsOf(data).map(numberOf);
    var sep = lang === "en" ? ", " : "\u3001";
    var end = lang === "en" ? "; " : "\uff1b";
    var parts = [];
    if (lessons.length) {
      parts.push((lessons.length > 1 ? labels.lesson_many : labels.lesson_one).replace("{}", lessons.join(sep)));
    }
    if (labs.length) {
      parts.push((labs.length > 1 ? labels.lab_many : labels.lab_one).replace("{}", labs.join(sep)));
    }
    return parts.join(end);
  }

  function composeText(p, labels, lang) {
    var gap = lang === "en" ? " " : "";
    var lines = [p.title + " [" + p.id + "]", labels.what + gap + p.what, labels.fix + gap + p.fix];
    lines = lines.concat(p.notes);
    if (p.code) {
      lines.push(labels.example);
      p.code.split(LINE_BREAK).forEach(function (line, i, all) {
        if (i < all.length - 1 || line !== "") {
          lines.push("    " + line);
        }
      });
    }
    lines.push(labels.lab + gap + p.lab);
    if (p.devices.length) {
      lines.push(labels.devices + gap + p.devices.join(lang === "en" ? ", " : "\u3001"));
    }
    return lines.join("\n");
  }

  function notDevice(compiled, cands) {
    var section = compiled.catalog.not_device;
    var message = cands.length ? cands[0] : "";
    var hint = null;
    for (var h = 0; h < compiled.hints.length; h++) {
      if (compiled.hints[h].rx.test(message)) {
        hint = compiled.hints[h].hint;
        break;
      }
    }
    var result = {
      family: null,
      devices: extractDevices(compiled, message),
      message: message,
      lab: null,
      lesson: null,
      parts: {},
    };
    ["en", "zh"].forEach(function (lang) {
      result.parts[lang] = {
        title: section.title[lang],
        text: section.text[lang],
        hint: hint ? hint[lang] : "",
      };
      result[lang] = section.title[lang] + "\n" + section.text[lang] + (hint ? "\n" + hint[lang] : "");
      result["title_" + lang] = section.title[lang];
    });
    return result;
  }

  /**
   * explain(catalog, text): devicekit.explain for a string, over the widget's catalog JSON.
   * Returns {family, devices, message, en, zh, title_en, title_zh, lab, lesson, parts: {en, zh}};
   * family is null for text that is not a known device error. Never throws for a string.
   */
  function explain(catalog, text) {
    text = String(text);
    if (text.length > MAX_CHARS) {
      var chars = Array.from(text);
      if (chars.length > MAX_CHARS) {
        text = chars.slice(chars.length - MAX_CHARS).join("");
      }
    }
    var compiled = compile(catalog);
    var cands = candidates(text);
    var hit = find(compiled, cands);
    if (hit === null) {
      return notDevice(compiled, cands);
    }
    var family = upgrade(compiled, hit, text);
    var devices = extractDevices(compiled, blank(hit.candidate, hit.spec.ignore));
    var data = family.data;
    var result = {
      family: data.id,
      devices: devices,
      message: hit.candidate,
      lab: data.lab == null ? null : data.lab,
      lesson: data.lesson == null ? null : data.lesson,
      parts: {},
    };
    ["en", "zh"].forEach(function (lang) {
      var p = parts(compiled, family, devices, hit.candidate, lang);
      result.parts[lang] = p;
      result[lang] = composeText(p, catalog.labels[lang], lang);
      result["title_" + lang] = data.title[lang];
    });
    return result;
  }

  // --- the widget ---------------------------------------------------------------------------------

  var UI = {
    en: {
      matched: "Line it matched:",
      more: "Read about this family in the atlas",
      notDeviceMore: "What the explainer recognises",
      none: "none named",
      empty: "Paste an error message or a traceback first.",
      failed:
        "The explainer could not run ({0}). Open the site through a web server (for example " +
        "mkdocs serve), or find your message in the families below.",
    },
    zh: {
      matched: "匹配到的报错行：",
      more: "在报错速查中查看这一类报错",
      notDeviceMore: "报错解读器能识别哪些报错",
      none: "报错中没有写出具体设备",
      empty: "请先粘贴一段报错信息或回溯信息（traceback）。",
      failed:
        "报错解读器无法运行（{0}）。请通过 Web 服务器访问本站（例如运行 mkdocs serve），" +
        "或者直接在下面的各个类别里查找你的报错。",
    },
  };

  function el(doc, tag, className, text) {
    var node = doc.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text != null) {
      node.textContent = text;
    }
    return node;
  }

  function labelled(doc, label, gap, content, className) {
    var p = el(doc, "p", className);
    p.appendChild(el(doc, "strong", null, label));
    if (typeof content === "string") {
      p.appendChild(doc.createTextNode(gap + content));
    } else {
      p.appendChild(doc.createTextNode(gap));
      p.appendChild(content);
    }
    return p;
  }

  function render(doc, output, result, catalog, lang, atlasUrl) {
    var ui = UI[lang];
    var labels = catalog.labels[lang];
    var gap = lang === "en" ? " " : "";
    var box = el(doc, "div", "dk-result");
    var anchor = result.family || "not-device";
    box.setAttribute("data-family", result.family || "");
    var p = result.parts[lang];

    var title = el(doc, "p", "dk-result__title");
    var link = el(doc, "a", null, p.title);
    link.href = atlasUrl + "#" + anchor;
    link.setAttribute("data-dk", "title");
    title.appendChild(link);
    if (result.family) {
      title.appendChild(doc.createTextNode(" "));
      title.appendChild(el(doc, "code", "dk-result__id", result.family));
    }
    box.appendChild(title);

    var devices = el(doc, "span", "dk-result__devices");
    devices.setAttribute("data-dk", "devices");
    if (result.devices.length) {
      result.devices.forEach(function (device, i) {
        if (i) {
          devices.appendChild(doc.createTextNode(" "));
        }
        devices.appendChild(el(doc, "code", "dk-device", device));
      });
    } else {
      // No italics in Chinese text (browsers fake a slant for CJK fonts).
      devices.appendChild(el(doc, lang === "zh" ? "span" : "em", null, ui.none));
    }
    box.appendChild(labelled(doc, labels.devices, gap, devices));

    if (result.family) {
      box.appendChild(labelled(doc, labels.what, gap, p.what));
      box.appendChild(labelled(doc, labels.fix, gap, p.fix));
      p.notes.forEach(function (note) {
        box.appendChild(el(doc, "p", "dk-result__note", note));
      });
      if (p.code) {
        box.appendChild(el(doc, "p", null)).appendChild(el(doc, "strong", null, labels.example));
        var pre = el(doc, "pre", "dk-result__code");
        pre.appendChild(el(doc, "code", null, p.code));
        box.appendChild(pre);
      }
      box.appendChild(labelled(doc, labels.lab, gap, p.lab));
    } else {
      box.appendChild(el(doc, "p", null, p.text));
      if (p.hint) {
        box.appendChild(el(doc, "p", "dk-result__note", p.hint));
      }
    }
    if (result.message) {
      box.appendChild(labelled(doc, ui.matched, gap, el(doc, "code", "dk-result__message", result.message)));
    }
    var more = el(doc, "a", "dk-result__more", result.family ? ui.more : ui.notDeviceMore);
    more.href = atlasUrl + "#" + anchor;
    box.appendChild(el(doc, "p", null)).appendChild(more);

    output.replaceChildren(box);
  }

  function message(doc, output, text, className) {
    output.replaceChildren(el(doc, "p", className || "dk-explainer__message", text));
  }

  function install(win, doc) {
    var script = doc.currentScript;
    var scriptUrl = script && script.src ? script.src : doc.baseURI;
    var pending = null;

    function loadCatalog() {
      if (pending === null) {
        var url = new URL("devicekit-catalog.json", scriptUrl);
        if (url.origin !== win.location.origin && url.protocol !== "file:") {
          // Never ask another host: the catalog ships with the site.
          pending = Promise.reject(new Error("the catalog is not on this site"));
        } else {
          pending = win.fetch(url.href, { credentials: "same-origin" }).then(function (response) {
            if (!response.ok) {
              throw new Error("HTTP " + response.status);
            }
            return response.json();
          });
        }
        pending.catch(function () {
          pending = null; // allow a retry
        });
      }
      return pending;
    }

    function attach(root) {
      var htmlLang = (doc.documentElement.getAttribute("lang") || "en").toLowerCase();
      var lang = root.getAttribute("data-lang") || (htmlLang.indexOf("zh") === 0 ? "zh" : "en");
      lang = has(UI, lang) ? lang : "en";
      var input = root.querySelector("textarea");
      var output = root.querySelector(".dk-explainer__output");
      var run = root.querySelector(".dk-explainer__run");
      var clear = root.querySelector(".dk-explainer__clear");
      var atlasUrl = root.getAttribute("data-atlas") || "";
      var timer = null;
      var generation = 0;
      if (!input || !output) {
        return;
      }

      function explainNow() {
        var text = input.value;
        var mine = ++generation;
        if (!strip(text)) {
          message(doc, output, UI[lang].empty);
          return;
        }
        function failed(error) {
          if (mine === generation) {
            var reason = String((error && error.message) || error);
            message(doc, output, UI[lang].failed.replace("{0}", reason), "dk-explainer__error");
          }
        }
        loadCatalog()
          .then(function (catalog) {
            if (mine === generation) {
              render(doc, output, explain(catalog, text), catalog, lang, atlasUrl);
            }
          })
          .catch(failed);
      }

      input.addEventListener("input", function () {
        win.clearTimeout(timer);
        timer = win.setTimeout(explainNow, 250);
      });
      if (run) {
        run.addEventListener("click", function () {
          win.clearTimeout(timer);
          explainNow();
        });
      }
      if (clear) {
        clear.addEventListener("click", function () {
          win.clearTimeout(timer);
          generation++;
          input.value = "";
          output.replaceChildren();
          input.focus();
        });
      }
      root.setAttribute("data-ready", "true");
    }

    function setup() {
      var roots = doc.querySelectorAll(".dk-explainer:not([data-ready])");
      for (var i = 0; i < roots.length; i++) {
        attach(roots[i]);
      }
    }

    if (win.document$ && typeof win.document$.subscribe === "function") {
      win.document$.subscribe(setup); // Material's page-load signal (also fires with instant navigation)
    } else if (doc.readyState === "loading") {
      doc.addEventListener("DOMContentLoaded", setup);
    } else {
      setup();
    }
  }

  return {
    explain: explain,
    candidates: candidates,
    compileRegex: compileRegex,
    extractDevices: function (catalog, text) {
      return extractDevices(compile(catalog), text);
    },
    install: install,
  };
});
