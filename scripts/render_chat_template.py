#!/usr/bin/env python3
"""Renders a chat template the way HF transformers' apply_chat_template does: the reference
that strata's Jinja renderer is tested against.

usage: render_chat_template.py TEMPLATE.jinja VARIABLES.json
       render_chat_template.py --batch JOBS.json
VARIABLES.json is one object: the template variables (messages, add_generation_prompt,
bos_token, tools, ...). Prints the render to stdout, exactly; on a template error prints
"error: ..." to stderr and exits 3. Exits 4 when jinja2 is missing.
JOBS.json is a list of [template path, variables] pairs; --batch prints a JSON list with
{"output": text} or {"error": message} for each (one interpreter start for many renders).
"""
import json
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("error: python3 jinja2 is not installed", file=sys.stderr)
    sys.exit(4)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


# HF replaces jinja2's tojson (which HTML-escapes <, >, & and ') with plain json.dumps.
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def render(template_path, variables):
    with open(template_path, encoding="utf-8") as f:
        source = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source).render(**variables)


def main():
    if sys.argv[1] == "--batch":
        with open(sys.argv[2], encoding="utf-8") as f:
            jobs = json.load(f)
        results = []
        for template_path, variables in jobs:
            try:
                results.append({"output": render(template_path, variables)})
            except Exception as e:  # noqa: BLE001 - any template failure is a failed render
                results.append({"error": f"{type(e).__name__}: {e}"})
        sys.stdout.buffer.write(json.dumps(results).encode("utf-8"))
        return
    with open(sys.argv[2], encoding="utf-8") as f:
        variables = json.load(f)
    try:
        out = render(sys.argv[1], variables)
    except Exception as e:  # noqa: BLE001 - any template failure is a failed render
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(3)
    sys.stdout.buffer.write(out.encode("utf-8"))


if __name__ == "__main__":
    main()
