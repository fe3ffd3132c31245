"""scripts/browser_check.py — drives examples/web in headless Chromium through its own UI.

Run by scripts/browser-check.sh, which starts a gateway and serves the page. Checks, against the
gateway's API and the bytes S3 returns:
  - a small file sent as an upload job completes, and its download link gives the same bytes;
  - an upload job shows progress (the bar from the API, the "sent" figure from XMLHttpRequest),
    pauses (the job is paused and its bytes stop), resumes and completes byte-identical;
  - a canceled upload job is canceled in the gateway and never listed;
  - a large file sent as a client-driven multipart upload survives a page reload: choosing the
    file again continues the same S3 upload from the parts S3 holds, and completes byte-identical;
  - the page lists the files and its dataUrl links download without an Authorization header.
Writes a screenshot of the page mid-upload and one at the end. Exits non-zero on any failure.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

MiB = 1024 * 1024
THROTTLED = 3 * MiB  # bytes/s the browser may send while a transfer is watched mid-way


def log(message):
    print(f"[browser] {message}", file=sys.stderr, flush=True)


class Check:
    def __init__(self, args):
        self.gateway = args.gateway.rstrip("/")
        self.token = args.token
        self.page = args.page
        self.shots = args.screenshots
        os.makedirs(self.shots, exist_ok=True)
        self.files = tempfile.mkdtemp(prefix="tg-browser-")
        options = webdriver.ChromeOptions()
        options.binary_location = args.chromium
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1100,1000", "--no-first-run", "--disable-background-networking"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(options=options, service=Service(args.chromedriver))

    # ---- helpers ----

    def api(self, path):
        request = urllib.request.Request(self.gateway + path, headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def make_file(self, name, size):
        path = os.path.join(self.files, name)
        with open(path, "wb") as out:
            out.write(os.urandom(size))
        return path

    def until(self, what, condition, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                self.driver.save_screenshot(os.path.join(self.shots, "failure.png"))
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def row(self, key):
        rows = self.driver.find_elements(By.CSS_SELECTOR, f'li.transfer[data-key="{key}"]')
        return rows[0] if rows else None

    def row_value(self, key, name):
        row = self.row(key)
        return row.get_attribute(f"data-{name}") if row else None

    def fraction(self, key):
        return float(self.row_value(key, "fraction") or 0)

    def state_is(self, key, state):
        return lambda: self.row_value(key, "state") == state

    def remembered(self):
        return self.driver.execute_script("return JSON.parse(localStorage.getItem('transferGateway.transfers') || '{}')")

    def choose(self, path, method="auto"):
        self.driver.execute_script("document.getElementById('method').value = arguments[0]", method)
        self.driver.find_element(By.ID, "files").send_keys(path)

    def throttle(self, upload):
        self.driver.set_network_conditions(offline=False, latency=0, download_throughput=100 * MiB,
                                           upload_throughput=upload)

    def unthrottle(self):
        self.driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=-1)

    # ---- the checks ----

    def open_page(self):
        self.driver.get(f"{self.page}/#gateway={self.gateway}&token={self.token}")
        self.until("the page to connect", lambda: "Connected" in self.driver.find_element(By.ID, "status").text, 30)
        assert "token=" not in self.driver.current_url, "the token stayed in the address bar"

    def small_job(self, path):
        self.choose(path)
        self.until("the small upload job to complete", self.state_is("example/small.bin", "completed"))
        assert self.row("example/small.bin").find_element(By.CSS_SELECTOR, ".method").text == "upload job"
        log("small file: upload job completed")

    def job_pause_resume(self, path):
        key = "example/paused.bin"
        self.throttle(THROTTLED)
        self.choose(path, "job")
        self.until("progress on the upload job", lambda: 0 < self.fraction(key) < 1)
        sent = self.row(key).find_element(By.CSS_SELECTOR, ".sent").text
        assert sent.endswith("sent") and not sent.startswith("0 B"), f"no XMLHttpRequest progress: {sent!r}"
        job_id = self.remembered()[key]["jobId"]
        self.row(key).find_element(By.CSS_SELECTOR, "button.pause").click()
        self.until("the row to show paused", self.state_is(key, "paused"))
        job = self.until("the job to be paused", lambda: (lambda j: j if j["state"] == "paused" else None)(self.api(f"/v1/jobs/{job_id}")))
        time.sleep(1.5)  # a window in which nothing may move: paused means no bytes
        later = self.api(f"/v1/jobs/{job_id}")
        assert later["state"] == "paused" and later["bytesTransferred"] == job["bytesTransferred"], \
            f"bytes moved while paused: {job['bytesTransferred']} → {later['bytesTransferred']}"
        self.row(key).find_element(By.CSS_SELECTOR, "button.resume").click()
        self.unthrottle()
        self.until("the resumed job to complete", self.state_is(key, "completed"))
        assert self.api(f"/v1/jobs/{job_id}")["state"] == "completed"
        log(f"upload job: progress shown, paused at {job['bytesTransferred']} bytes, resumed, completed")

    def job_cancel(self, path):
        key = "example/canceled.bin"
        self.throttle(THROTTLED)
        self.choose(path, "job")
        self.until("progress on the job to cancel", lambda: 0 < self.fraction(key) < 1)
        job_id = self.remembered()[key]["jobId"]
        self.row(key).find_element(By.CSS_SELECTOR, "button.cancel").click()
        self.until("the row to show canceled", self.state_is(key, "canceled"))
        self.unthrottle()
        assert self.api(f"/v1/jobs/{job_id}")["state"] == "canceled"
        assert key not in self.remembered()
        log("upload job: canceled in the gateway")

    def multipart_reload(self, path):
        key = "example/large.bin"
        self.throttle(THROTTLED)
        self.choose(path)
        self.until("two parts held by S3", lambda: self.fraction(key) >= 0.25, 120)
        self.driver.save_screenshot(os.path.join(self.shots, "web-example-progress.png"))
        upload_id = self.remembered()[key]["uploadId"]
        assert self.row(key).find_element(By.CSS_SELECTOR, ".method").text == "multipart to S3"
        self.driver.refresh()
        self.until("the interrupted upload to wait for its file", self.state_is(key, "waiting for file"), 30)
        held = self.api(f"/v1/uploads/{upload_id}")
        assert held["state"] == "open" and len(held["parts"]) >= 2, held
        self.choose(path)
        # The bar starts from what S3 already holds, before any byte is sent again.
        self.until("the resumed upload to run", lambda: self.row_value(key, "state") in ("running", "completed"), 30)
        resumed_from = self.fraction(key)
        assert resumed_from >= held["fractionCompleted"], f"resumed from {resumed_from}, S3 held {held['fractionCompleted']}"
        assert self.remembered().get(key, {}).get("uploadId", upload_id) == upload_id, "a new upload was started"
        self.unthrottle()
        self.until("the multipart upload to complete", self.state_is(key, "completed"), 120)
        done = self.api(f"/v1/uploads/{upload_id}")
        assert done["state"] == "completed", done
        log(f"multipart: reloaded with {len(held['parts'])} of {held['partCount']} parts held, the same upload completed")

    def listed_keys(self):
        return set(self.driver.execute_script(
            "return Array.from(document.querySelectorAll('#object-rows tr'), (row) => row.dataset.key)"))

    def link_for(self, name):
        """Clicks the row's "Get link" and answers the link; a list drawn again meanwhile (a
        listing that finished late) is read afresh."""
        def attempt():
            try:
                row = self.driver.find_element(By.CSS_SELECTOR, f'#object-rows tr[data-key="{name}"]')
                anchors = row.find_elements(By.CSS_SELECTOR, "a.download")
                if anchors:
                    return anchors[0].get_attribute("href")
                buttons = row.find_elements(By.CSS_SELECTOR, "button.link")
                if buttons and buttons[0].is_enabled():
                    buttons[0].click()
                return None
            except StaleElementReferenceException:
                return None
        return self.until(f"a download link for {name}", attempt)

    def downloads(self, expected):
        self.driver.find_element(By.ID, "refresh").click()
        listed = self.until("the list to show every file", lambda: (lambda keys: keys if set(expected) <= keys else None)(
            self.listed_keys()))
        assert "example/canceled.bin" not in listed, listed
        for name, path in expected.items():
            href = self.link_for(name)
            with urllib.request.urlopen(href, timeout=60) as response:  # no Authorization header
                body = response.read()
            with open(path, "rb") as original:
                assert body == original.read(), f"{name}: the download differs from the file sent"
        log(f"downloads: {len(expected)} files listed and byte-identical through their dataUrl links")

    def run(self):
        try:
            self.open_page()
            files = {
                "small.bin": self.make_file("small.bin", 3 * MiB + 17),
                "paused.bin": self.make_file("paused.bin", 12 * MiB + 5),
                # Three parts: the bar moves after the first is stored, and at 3 MiB/s the cancel
                # lands seconds before the end (with two parts the click could come as it ended).
                "canceled.bin": self.make_file("canceled.bin", 15 * MiB),
                "large.bin": self.make_file("large.bin", 40 * MiB + 123),
            }
            self.small_job(files["small.bin"])
            self.job_pause_resume(files["paused.bin"])
            self.job_cancel(files["canceled.bin"])
            self.multipart_reload(files["large.bin"])
            self.downloads({"example/" + name: files[name] for name in ("small.bin", "paused.bin", "large.bin")})
            self.driver.save_screenshot(os.path.join(self.shots, "web-example.png"))
            log(f"screenshots in {self.shots}")
        finally:
            self.driver.quit()
            for name in os.listdir(self.files):
                os.remove(os.path.join(self.files, name))
            os.rmdir(self.files)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--page", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--screenshots", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    Check(parser.parse_args()).run()


if __name__ == "__main__":
    main()
