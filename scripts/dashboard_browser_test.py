#!/usr/bin/env python3
"""The dashboard in headless Chromium against the real `buzzkit` binary (API.md section 15).

Run by scripts/dashboard-browser-test.sh, which installs the browser. Starts `buzzkit serve` on a
free port with a fresh database and a tenant made by `buzzkit tenant create`, prepares people over
the API, then drives the page the way an operator would. Exits non-zero on the first failed check.
Screenshots go to $DASHBOARD_SCREENSHOTS.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

SHOTS = os.environ.get("DASHBOARD_SCREENSHOTS", "/tmp/dashboard-screenshots")
XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


def alnum(n):
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(n))


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print("ok:", message)


# MARK: - The server and its API


class Server:
    def __init__(self, binary):
        self.binary = binary
        self.directory = tempfile.mkdtemp(prefix="buzzkit-dashboard-")
        self.database = os.path.join(self.directory, "buzzkit.sqlite")
        self.workspace_key = "bk_ws_" + alnum(32)
        # The webhooks view's receiver listens on loopback, which the server refuses by default.
        self.env = dict(os.environ, BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=self.workspace_key,
                        BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS="true")
        self.process = None
        self.port = None

    def create_tenant(self, name):
        out = subprocess.run(
            [self.binary, "tenant", "create", name, "--database", self.database],
            env=self.env, check=True, capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout)

    def start(self):
        config = os.path.join(self.directory, "buzzkit.json")
        with open(config, "w") as f:
            json.dump({"logLevel": "warn"}, f)
        self.stderr = open(os.path.join(self.directory, "stderr.log"), "w")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", "0", "--database", self.database, "--config", config],
            env=self.env, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("buzzkit exited before listening; see " + self.stderr.name)
            if line.startswith("listening on http://"):
                self.port = int(line.strip().rsplit(":", 1)[1])
                return
        raise RuntimeError("buzzkit did not print its listening line")

    @property
    def origin(self):
        return "http://127.0.0.1:%d" % self.port

    def call(self, method, path, key, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.origin + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + key)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


def identity_hash(secret, external_id):
    return hmac.new(secret.encode(), external_id.encode(), hashlib.sha256).hexdigest()


# MARK: - The browser


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,1000", "--no-first-run", "--no-default-browser-check",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    try:
        return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    except WebDriverException as error:
        print("dashboard-browser-test: headless Chromium did not start:", error, file=sys.stderr)
        sys.exit(1)


class Page:
    def __init__(self, driver, server):
        self.driver = driver
        self.server = server
        self.requests = []
        self.console = []

    def wait(self, condition, timeout=15, what="the page"):
        try:
            return WebDriverWait(self.driver, timeout).until(condition)
        except TimeoutException:
            self.shot("failure")
            for entry in self.console:
                print("browser console:", entry["level"], entry["message"], file=sys.stderr)
            raise AssertionError("timed out waiting for " + what)

    def visible(self, css, timeout=15):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), timeout, css)

    def text_in(self, css, text, timeout=15):
        self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text), timeout, "%r in %s" % (text, css))
        return self.driver.find_element(By.CSS_SELECTOR, css).text

    def click(self, css):
        element = self.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, css)), what=css)
        element.click()
        return element

    def type(self, css, text, clear=True):
        element = self.visible(css)
        if clear:
            element.clear()
        element.send_keys(text)
        return element

    def go(self, view):
        self.driver.execute_script("location.hash = arguments[0]", view)

    def idle(self):
        """No "Loading…" left on the page."""
        self.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, "main .loading"), what="loading to finish")

    def shot(self, name):
        """The whole page, not only the window: DevTools captures beyond the viewport."""
        self.drain_logs()
        path = os.path.join(SHOTS, name + ".png")
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        image = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            # The window's width, scroll bar included: the content size leaves the scroll bar's
            # 15 px out and would crop the right edge of the page.
            "clip": {"x": 0, "y": 0, "width": max(size["width"], self.driver.execute_script("return window.innerWidth")),
                     "height": size["height"], "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(image["data"]))
        print("screenshot:", path)

    def drain_logs(self):
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
        self.console += self.driver.get_log("browser")

    def sign_in(self, key):
        self.driver.get(self.server.origin + "/dashboard")
        self.type("#signin-key", key)
        self.click("#signin-submit")


# MARK: - Webhooks, on a server that has them (API.md section 14)


class Receiver:
    """A loopback endpoint that answers 204 and remembers the event types it got."""

    def __init__(self):
        import http.server
        import threading
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    received.append(json.loads(body).get("type"))
                except ValueError:
                    received.append(None)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/hook" % self.httpd.server_address[1]

    def stop(self):
        self.httpd.shutdown()


def webhooks_view(page, server):
    driver = page.driver
    receiver = Receiver()
    try:
        page.type("#webhook-url", receiver.url)
        page.type("#webhook-description", "<i>ops</i> receiver")
        page.type("#webhook-events", "subscriber.created" + Keys.ENTER)
        check(page.visible("#webhook-secret").text.startswith("whsec_"), "a new endpoint's secret is shown once")
        section = page.visible("section[data-webhook]")
        check("<i>ops</i> receiver" in section.text, "the endpoint is listed, its description as text")
        page.click("section[data-webhook] button[data-action='test']")
        page.text_in("section[data-webhook]", "Test event")
        deadline = time.time() + 20
        while "webhook.test" not in receiver.received and time.time() < deadline:
            time.sleep(0.2)
        check("webhook.test" in receiver.received, "the test event reached the receiver")
        page.click("section[data-webhook] button[data-action='deliveries']")
        page.text_in("section[data-webhook]", "webhook.test")
        print("ok: the deliveries list shows the test delivery")
    finally:
        receiver.stop()


# MARK: - The scenario


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    os.makedirs(SHOTS, exist_ok=True)

    server = Server(os.path.abspath(args.binary))
    driver = None
    try:
        acme = server.create_tenant("acme")
        server.start()
        secret_key, client_key = acme["secretKey"], acme["clientKey"]
        identity_secret = acme["identitySecret"]

        # People, made over the API as an app and a backend would.
        anonymous = "anon_" + alnum(21)
        status, _ = server.call("POST", "/v1/events", client_key, {
            "subscriberId": anonymous,
            "events": [{"id": "e1", "name": "app_opened"}, {"id": "e2", "name": "onboarding_started"}]})
        check(status == 200, "an anonymous subscriber sends two events")
        status, _ = server.call("PUT", "/v1/subscribers/ada", secret_key, {
            "email": "ada@example.com", "attributes": {"plan": "pro", "bio": XSS}})
        check(status == 201, "the backend creates ada with an attribute holding HTML")
        status, body = server.call("POST", "/v1/identify", client_key, {
            "externalId": "ada", "anonymousId": anonymous, "identityHash": identity_hash(identity_secret, "ada"),
            "attributes": {"theme": "dark"}})
        check(status == 200 and body["data"]["merge"]["shape"] == "absorb", "ada signs in on the device: absorb")
        proof = {"BuzzKit-Identity-Hash": identity_hash(identity_secret, "ada")}
        status, _ = server.call("PUT", "/v1/subscribers/ada/push-subscriptions/iphone-1", client_key, {
            "token": "apns-<b>token</b>", "platform": "ios", "permission": "authorized",
            "device": {"appVersion": "2.1", "osVersion": "18.1", "model": "iPhone16,1", "locale": "en_GB"}},
            headers=proof)
        check(status == 200, "ada's phone registers for push")
        status, _ = server.call("PUT", "/v1/subscribers/ada/preferences", client_key, {"topics": {"news": False}},
                                headers=proof)
        check(status == 200, "ada turns the news topic off")
        for i in range(3):
            server.call("POST", "/v1/events", client_key, {
                "subscriberId": "anon_" + alnum(21), "events": [{"id": "x%d" % i, "name": "app_opened"}]})
        server.call("POST", "/v1/identify", client_key, {"externalId": "grace"})

        driver = start_browser()
        page = Page(driver, server)

        # A wrong key is refused with a message, and nothing else appears.
        page.sign_in("bk_secret_" + alnum(32))
        error = page.text_in("#signin-error", "does not work")
        check("unauthorized" in error, "a wrong key shows the API's refusal: %r" % error)
        check(not driver.find_element(By.ID, "app").is_displayed(), "a wrong key does not open the dashboard")
        page.shot("01-sign-in-wrong-key")

        # Sign in with the secret key, from the keyboard alone: the subscribers view, newest first.
        driver.get(server.origin + "/dashboard")
        check(driver.switch_to.active_element.get_attribute("id") == "signin-key", "the key field has the focus")
        driver.switch_to.active_element.send_keys(secret_key + Keys.ENTER)
        page.visible("#subscriber-list table")
        page.idle()
        rows = driver.find_elements(By.CSS_SELECTOR, "#subscriber-list tbody tr")
        first = rows[0].find_element(By.CSS_SELECTOR, "td a").text
        check(first == "grace", "the newest subscriber comes first (got %r)" % first)
        check(len(rows) == 5, "five subscribers listed: grace, three anonymous, ada (got %d)" % len(rows))
        check(driver.execute_script("return sessionStorage.getItem('buzzkit.key')") == secret_key,
              "the key is kept in sessionStorage")
        check(driver.execute_script("return localStorage.length") == 0, "nothing in localStorage")
        page.shot("02-subscribers")
        driver.set_window_size(390, 844)
        time.sleep(0.3)
        page.shot("02-subscribers-phone")
        driver.set_window_size(1280, 1000)
        page.click("button[data-filter='verified']")
        page.idle()
        page.wait(lambda d: [a.text for a in d.find_elements(By.CSS_SELECTOR, "#subscriber-list tbody td a")] == ["ada"],
                  what="the verified filter to show only ada")
        print("ok: the verified filter shows ada alone")
        page.click("button[data-filter='anonymous']")
        page.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#subscriber-list tbody tr")) == 3,
                  what="the anonymous filter to show three")
        print("ok: the anonymous filter shows the three anonymous subscribers")
        page.click("button[data-filter='all']")
        page.idle()

        # Search by the alias: lands on ada, says how, shows the merge and the badge.
        page.type("#search-id", anonymous + Keys.ENTER)
        page.text_in("#subscriber-id", "ada")
        page.idle()
        check(anonymous in page.text_in("#resolved-from", "Reached through alias"), "says it was reached through the alias")
        check("verified" in driver.find_element(By.ID, "verified-badge").text, "the verified badge shows")
        check(anonymous in driver.find_element(By.ID, "aliases").text, "the alias is listed")
        merge = page.visible("#timeline tr.merge")
        check(anonymous in merge.text and "absorb" in merge.text and "2 events moved" in merge.text,
              "the timeline shows the merge: from, shape, events moved (%r)" % merge.text)
        seqs = [int(td.text) for td in driver.find_elements(By.CSS_SELECTOR, "#timeline tbody tr td:first-child")]
        check(seqs == sorted(seqs) and len(seqs) == 3, "the timeline is in seq order: %r" % seqs)
        bio = driver.find_element(By.CSS_SELECTOR, "tr[data-attribute='bio'] td.value")
        check(bio.text == XSS, "the HTML attribute shows as its text")
        check(not bio.find_elements(By.TAG_NAME, "img") and not bio.find_elements(By.TAG_NAME, "script"),
              "the HTML attribute made no element")
        check(driver.execute_script("return window.__xss === undefined"), "the HTML attribute ran nothing")
        sources = {row.get_attribute("data-attribute"): row.find_elements(By.CSS_SELECTOR, "td")[2].text
                   for row in driver.find_elements(By.CSS_SELECTOR, "tr[data-attribute]")}
        check(sources.get("plan") == "backend" and sources.get("theme") == "app",
              "attributes say who set them: %r" % sources)
        push = driver.find_element(By.CSS_SELECTOR, "#push-subscriptions").text
        check("iphone-1" in push and "apns-<b>token</b>" in push, "the push subscription shows, its token as text")
        check("iPhone16,1" in driver.find_element(By.CSS_SELECTOR, "#devices").text, "the device shows")
        check("news" in driver.find_element(By.CSS_SELECTOR, "#preferences").text, "the topic choice shows")
        page.shot("03-subscriber")
        driver.set_window_size(390, 844)
        time.sleep(0.3)
        page.shot("04-subscriber-phone")
        driver.set_window_size(1280, 1000)

        # Backend merge of another anonymous id into ada from the page.
        other = "anon_" + alnum(21)
        server.call("POST", "/v1/events", client_key, {"subscriberId": other, "events": [{"id": "o1", "name": "ping"}]})
        page.type("#merge-anonymous-id", other + Keys.ENTER)
        page.wait(lambda d: other in d.find_element(By.ID, "aliases").text, what="the merged id among the aliases")
        print("ok: a backend merge from the page adds the anonymous id to ada")

        # Erase grace, confirming with her id.
        page.go("#/subscriber/grace")
        page.click("#erase-start")
        page.type("#erase-confirm-id", "gracE")
        page.click("#erase-confirm")
        page.text_in("main .confirm", "Type the id exactly")
        status, _ = server.call("GET", "/v1/subscribers/grace", secret_key)
        check(status == 200, "a wrong confirmation erases nothing")
        page.type("#erase-confirm-id", "grace")
        page.click("#erase-confirm")
        page.visible("#subscriber-list table")
        status, _ = server.call("GET", "/v1/subscribers/grace", secret_key)
        check(status == 404, "erasing from the page deletes the person")

        # Verification: the counts, then enforce and watch the API refuse an unproven identify.
        page.go("#/verification")
        page.text_in("#verified-counts", "1 verified of 1 identified")
        page.shot("05-verification")
        check(not driver.find_element(By.ID, "require-verification").is_selected(), "verification starts off")
        page.click("#require-verification")
        page.text_in("#require-status", "Verification is required")
        status, body = server.call("POST", "/v1/identify", client_key, {"externalId": "mallory"})
        check(status == 401 and body["error"]["code"] == "identity_verification_required",
              "with the switch on, the API refuses an unverified identify (%d %s)" % (status, body["error"]))
        page.click("#require-verification")
        page.text_in("#require-status", "not required")
        status, _ = server.call("POST", "/v1/identify", client_key, {"externalId": "mallory"})
        check(status == 200, "switched off again, the same identify succeeds")

        # Settings: the API's rules and messages.
        page.go("#/settings")
        page.visible("#settings-save")
        page.type("#setting-maxKeys", "0")
        page.click("#settings-save")
        check("'attributeLimits.maxKeys' must be an integer from 1 to 1000000." in page.text_in("#settings-result", "must be"),
              "an out-of-range limit is refused with the API's wording")
        page.type("#setting-maxKeys", "100")
        page.type("#setting-blockedExternalIds", "tester")
        page.click("#settings-save")
        page.text_in("#settings-result", "Saved")
        status, body = server.call("POST", "/v1/identify", client_key, {"externalId": "tester"})
        check(status == 400 and body["error"]["code"] == "invalid_external_id", "a blocked id set on the page is refused")
        if driver.find_elements(By.ID, "setting-maxAliases"):
            # A rule the page leaves to the API: its refusal is shown in the API's own words.
            _, refusal = server.call("PATCH", "/v1/tenant", secret_key, {"maxAliases": 0})
            page.type("#setting-maxAliases", "0")
            page.click("#settings-save")
            shown = page.text_in("#settings-result", refusal["error"]["message"])
            check(refusal["error"]["code"] in shown, "an API refusal is shown with its message: %r" % shown)
            page.type("#setting-maxAliases", "1000")
        page.shot("06-settings")

        # Identity secret: reveal, rotate, see when the old one stops.
        page.go("#/secret")
        page.click("#secret-reveal")
        check(page.visible("#identity-secret").text == identity_secret, "reveal shows the current secret")
        page.click("#secret-rotate")
        page.click("#secret-rotate-confirm")
        rotated = page.visible("#rotated-secret").text
        check(rotated.startswith("bk_isec_") and rotated != identity_secret, "rotate shows a new secret")
        check("stops verifying" in page.visible("#rotated-expires").text, "and when the previous stops verifying")
        _, body = server.call("GET", "/v1/tenant/identity-secret", secret_key)
        check(body["data"]["identitySecret"] == rotated, "the API now answers the new secret")
        page.shot("07-identity-secret")

        # Keys: issue one (shown once), check it works, revoke it, check it no longer does.
        page.go("#/keys")
        page.visible("#key-list table")
        page.click("#key-issue")
        issued = page.visible("#issued-key").text
        check(issued.startswith("bk_secret_"), "a new secret key is shown")
        status, _ = server.call("GET", "/v1/tenant", issued)
        check(status == 200, "the issued key works")
        page.shot("08-keys-issued")
        row = "tr[data-key] td.mono"
        prefix = issued[: len("bk_secret_") + 4] + "…"
        key_id = driver.execute_script(
            "return [...document.querySelectorAll('tr[data-key]')].find(r => r.cells[0].textContent === arguments[0]"
            " && r.querySelector('[data-revoke]')).dataset.key", prefix)
        page.click("button[data-revoke='%s']" % key_id)
        page.click("button[data-revoke-confirm='%s']" % key_id)
        page.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, "button[data-revoke='%s']" % key_id), what="revocation")
        status, body = server.call("GET", "/v1/tenant", issued)
        check(status == 401, "the revoked key is refused by the API")
        del row

        # Webhooks: this server has them, so the view must list endpoints (the page's
        # "not available" fallback is for older servers and would hide a broken view here).
        page.go("#/webhooks")
        page.wait(lambda d: d.find_elements(By.ID, "webhooks-unavailable") or d.find_elements(By.ID, "webhook-url"),
                  what="the webhooks view")
        check(not driver.find_elements(By.ID, "webhooks-unavailable"),
              "the webhooks view works on a server that has webhooks")
        webhooks_view(page, server)
        page.shot("09-webhooks")

        # A key revoked while signed in: the page says so instead of going blank.
        page.go("#/keys")
        page.visible("#key-list table")
        page.click("#key-issue")
        second = page.visible("#issued-key").text
        page.click("#sign-out")
        page.sign_in(second)
        page.visible("#subscriber-list table")
        page.go("#/keys")
        page.visible("#key-list table")
        mine = driver.execute_script(
            "return [...document.querySelectorAll('tr[data-key]')].find(r => r.cells[0].textContent === arguments[0]"
            " && r.querySelector('[data-revoke]')).dataset.key", second[: len("bk_secret_") + 4] + "…")
        page.click("button[data-revoke='%s']" % mine)
        page.click("button[data-revoke-confirm='%s']" % mine)
        check("This key no longer works" in page.text_in("#banner", "no longer works"),
              "revoking the key in use shows that it no longer works")
        page.shot("10-key-revoked")

        # A workspace key: create a tenant, switch, open the first one by id.
        page.click("#banner button")
        page.sign_in(server.workspace_key)
        page.visible("#tenant-new-name")
        page.type("#tenant-new-name", "beta" + Keys.ENTER)
        page.visible("#created-secret-key")
        check(page.visible("#created-secret-key").text.startswith("bk_secret_"), "a new tenant's keys are shown once")
        options = [o.text for o in driver.find_elements(By.CSS_SELECTOR, "#tenant-select option")]
        check(any(o.startswith("beta") for o in options), "the switcher offers the new tenant: %r" % options)
        page.shot("11-tenants")
        page.type("#tenant-open-id", acme["tenant"]["id"] + Keys.ENTER)
        page.visible("#subscriber-list table")
        page.idle()
        names = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#subscriber-list tbody td a")]
        check("ada" in names, "opening acme by id with the workspace key lists its people")
        beta = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#tenant-select option")
                if o.text.startswith("beta")][0]
        driver.execute_script(
            "const s = document.getElementById('tenant-select'); s.value = arguments[0];"
            " s.dispatchEvent(new Event('change'))", beta)
        page.text_in("#subscriber-list", "No subscribers yet")
        print("ok: switching to beta shows its empty list")
        page.shot("12-workspace-switch")

        # Nothing but this origin, ever; no CSP violation in the console.
        page.drain_logs()
        foreign = [url for url in page.requests if not url.startswith(server.origin + "/")]
        check(page.requests and not foreign, "%d requests, all to this origin (others: %r)" % (len(page.requests), foreign))
        violations = [e["message"] for e in page.console if "Content Security Policy" in e["message"]]
        check(not violations, "no Content-Security-Policy violation: %r" % violations)
        check(not any(url.endswith("/x") for url in page.requests), "the HTML attribute's <img src=x> was never fetched")
        print("dashboard browser test: all checks passed; screenshots in", SHOTS)
    finally:
        if driver is not None:
            driver.quit()
        server.stop()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print("dashboard browser test FAILED:", error, file=sys.stderr)
        sys.exit(1)
