"""Fixtures shared across the test folders: headless Chromium sessions for the browser tests, and
the thread and batch settings every test running a real local model runs under."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

import pytest

CHROMIUM = os.environ.get("NEPOTISM_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("NEPOTISM_CHROMEDRIVER", "/usr/bin/chromedriver")


def _browser_missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(path)):
            return f"{path} not found: install Debian's chromium and chromium-driver (scripts/install_browser.sh)"
    return None


@pytest.fixture
def browser_factory(tmp_path_factory):
    """Start headless Chromium sessions driven by Selenium (console logs kept); skipped when absent."""
    reason = _browser_missing()
    if reason:
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    drivers = []

    def start():
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        profile = tmp_path_factory.mktemp("chromium-profile")
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
            f"--user-data-dir={profile}",
        ):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(30)
        drivers.append(driver)
        return driver

    yield start
    for driver in drivers:
        driver.quit()


@dataclass(frozen=True)
class ModelSetting:
    """How a local model computes: CPU threads (``$NEPOTISM_MODEL_THREADS``, or a backend's
    ``n_threads``), prompt tokens per decode (``n_batch``) and llama.cpp's fused attention kernel
    (``flash_attn``)."""

    threads: int
    n_batch: int
    flash_attn: bool

    def gguf(self) -> dict:
        """`GGUFBackend` keyword arguments giving this setting."""
        return {"n_threads": self.threads, "n_batch": self.n_batch, "flash_attn": self.flash_attn}

    def toml(self) -> str:
        """The experiment-file lines of a gguf model giving this batch size and attention kernel
        (the threads come from ``$NEPOTISM_MODEL_THREADS``: `model_env`)."""
        return f"n_batch = {self.n_batch}\nflash_attn = {str(self.flash_attn).lower()}\n"


#: Greedy text and log-probabilities of a local model are the same on every call of one machine,
#: build and setting, not across them: another CPU's SIMD paths round differently, and a greedy
#: text takes another word after a near tie (issue 35: a test comparing the model's text with a
#: recording made on an AVX-512 machine failed on AVX2 ones). So every test running a real model
#: runs under two settings here: the default (2 threads, batch 512) and 1 thread, prompts decoded
#: 32 tokens at a time, with llama.cpp's flash attention — on the AVX2 machine measured, threads and
#: batch alone changed no bit, while flash attention moved label log-probabilities by up to 0.04
#: nats and made greedy texts part within a few sentences, as another machine would. An assertion
#: that holds under only one of them is a recording of one machine and fails here first.
MODEL_SETTINGS = (ModelSetting(threads=2, n_batch=512, flash_attn=False), ModelSetting(threads=1, n_batch=32, flash_attn=True))


@pytest.fixture(
    scope="module",
    params=MODEL_SETTINGS,
    ids=lambda s: f"threads{s.threads}-batch{s.n_batch}" + ("-flashattn" if s.flash_attn else ""),
)
def model_setting(request) -> ModelSetting:
    """One of `MODEL_SETTINGS` (module scope: a loaded model is shared by a module's tests)."""
    return request.param


#: pytest's timeout (pyproject: 600 s) guards against a hang; a test running a real model on two
#: busy cores can take longer than that without hanging (the local_gguf example took 482 s and a
#: tiny SFT run over 600 s with 8 processes sharing 2 cores), so these get this much instead.
MODEL_TEST_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items):
    for item in items:
        if "model_setting" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(MODEL_TEST_TIMEOUT_S))


@pytest.fixture
def model_env(model_setting, monkeypatch) -> ModelSetting:
    """`model_setting` with ``$NEPOTISM_MODEL_THREADS`` set to its threads for this test (and the
    commands it starts); the rest goes into the experiment file the test writes (`ModelSetting.toml`)."""
    monkeypatch.setenv("NEPOTISM_MODEL_THREADS", str(model_setting.threads))
    return model_setting


#: With NEPOTISM_REQUIRE_EXTRAS=1 (set by .ci/run) a test may skip only for these reasons: data
#: beside the repository (../shared is not part of a clone), kernel features a container may lack
#: (a network namespace, mounting a small tmpfs for the full-disk and read-only tests),
#: and the optional `litellm` extra (deliberately not in `test`). Any other skip — a missing extra,
#: browser, model package or model hash — fails, so CI cannot pass by skipping what it should test.
_ALLOWED_SKIPS = (
    "../shared",
    "beside the repository",
    "shared data",
    "ifeval data is not at",
    "network namespace",
    "kill(-1)",
    "cannot mount a tmpfs",
    "litellm",
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("NEPOTISM_REQUIRE_EXTRAS") != "1" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if not any(allowed in reason.lower() for allowed in _ALLOWED_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"NEPOTISM_REQUIRE_EXTRAS=1 and the test skipped: {reason}"
