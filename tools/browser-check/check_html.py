#!/usr/bin/env python3
"""Open a pageblock HTML report in headless Chromium (the system browser, driven by Playwright)
and report what a reader would get: console errors, failed requests, pageblock cells, charts.

Usage: check_html.py FILE.html SCREENSHOT.png
Prints JSON: {"console_errors": [...], "requests": n, "cells": n, "maps": n, "charts": n,
"width": px, "height": px}. Exits 1 if the page cannot be opened.
"""
import json
import pathlib
import shutil
import sys

from playwright.sync_api import sync_playwright


def main() -> int:
    page_path = pathlib.Path(sys.argv[1]).resolve()
    shot = sys.argv[2]
    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri(), wait_until="load")
        result = {
            "console_errors": errors,
            "requests": len([u for u in requests if not u.startswith("file:")]),
            "cells": page.locator("svg.map rect.pb").count(),
            "maps": page.locator("svg.map").count(),
            "charts": page.locator("svg.chart").count(),
            "series": page.locator("svg.chart polyline.series").count(),
            "width": page.evaluate("document.documentElement.scrollWidth"),
            "height": page.evaluate("document.documentElement.scrollHeight"),
        }
        page.screenshot(path=shot, full_page=True)
        browser.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
