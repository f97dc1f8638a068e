"""End to end in a real headless Chromium (Debian's chromium + chromium-driver) driving
the real server on 127.0.0.1: search, filter, open an environment, play it to a win with
its solution, export; and model-written markup shown as text, never run.

Screenshots of every page go to ``$SPADE_TEST_ARTIFACTS/web`` (else a temporary
directory, named at the end of the run). One browser for the whole module.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from .conftest import EVIL_DESCRIPTION, SCREENSHOT_DIRS, artifacts_dir

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def _require(ok: bool, what: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI (.ci/run installs it)")
    pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    path = artifacts_dir(tmp_path_factory)
    SCREENSHOT_DIRS.append(path)
    return path


@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _require(False, "selenium (pip install 'spade-envs[dev]')")
    _require(
        Path(CHROMIUM).exists() or shutil.which("chromium") is not None,
        "chromium (apt-get install chromium)",
    )
    _require(
        Path(CHROMEDRIVER).exists() or shutil.which("chromedriver") is not None,
        "chromedriver (apt-get install chromium-driver)",
    )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests may run as root, where Chromium's own sandbox cannot
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--no-first-run",
    ):
        options.add_argument(argument)
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = CHROMEDRIVER if Path(CHROMEDRIVER).exists() else shutil.which("chromedriver")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    yield driver
    driver.quit()


def shoot(driver, shots: Path, name: str) -> None:
    """A screenshot of the whole page (the window is resized to the page's height)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, max(900, min(int(height) + 40, 6000)))
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(shots / f"{name}.png"))
    driver.set_window_size(1400, 1000)


def wait(driver, condition, timeout: float = 30.0):
    """Wait for ``condition``; an element gone stale in a page change just means "not yet"."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (StaleElementReferenceException, NoSuchElementException)
    return WebDriverWait(driver, timeout, ignored_exceptions=ignored).until(condition)


def listed_ids(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    cells = driver.find_elements(By.CSS_SELECTOR, "table.envs tbody td:first-child a")
    return [c.text for c in cells]


def no_script_ran(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return window.__pwned === undefined")
    try:
        alert = driver.switch_to.alert
        text = alert.text
    except NoAlertPresentException:
        pass
    else:
        raise AssertionError(f"an alert ran: {text!r}")
    inline = driver.execute_script("return document.querySelectorAll('script:not([src])').length")
    assert inline == 0


def test_search_from_the_header_and_by_meaning(browser, server, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    browser.get(server.url)
    assert browser.find_element(By.TAG_NAME, "h1").text == "Corpus overview"
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart")) == 6
    shoot(browser, shots, "01-overview")
    box = browser.find_element(By.CSS_SELECTOR, "header form.quick input[name=q]")
    box.send_keys("maze", Keys.ENTER)
    wait(browser, lambda d: "/envs?q=maze" in d.current_url)
    assert listed_ids(browser) == ["spade/MazeExplore-v1"]
    shoot(browser, shots, "02-search-text")
    box = browser.find_element(By.CSS_SELECTOR, "#filters input[name=q]")
    box.clear()
    box.send_keys("walk through a maze to find the exit")
    Select(browser.find_element(By.CSS_SELECTOR, "#filters select[name=mode]")).select_by_value(
        "semantic"
    )  # app.js submits on change
    wait(browser, lambda d: "mode=semantic" in d.current_url)
    assert listed_ids(browser)[0] == "spade/MazeExplore-v1"
    assert "by meaning" in browser.find_element(By.ID, "summary").text
    shoot(browser, shots, "03-search-semantic")


def test_filter_by_skill_and_status(browser, server, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server.url + "envs")
    Select(browser.find_element(By.CSS_SELECTOR, "#filters select[name=skill]")).select_by_value(
        "math"
    )
    wait(browser, lambda d: "skill=math" in d.current_url)
    Select(browser.find_element(By.CSS_SELECTOR, "#filters select[name=status]")).select_by_value(
        "validated"
    )
    wait(browser, lambda d: "status=validated" in d.current_url)
    ids = listed_ids(browser)
    assert sorted(ids) == ["spade/Nim-v1", "spade/NumberGuess-v1", "spade/NumberGuessHarder-v1"]
    skills = browser.find_elements(By.CSS_SELECTOR, "table.envs tbody td:nth-child(3)")
    assert {s.text for s in skills} == {"math"}
    shoot(browser, shots, "04-filter")


def test_open_an_environment(browser, server, shots):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "envs?skill=math&sort=hint_gain")
    browser.find_element(By.LINK_TEXT, "spade/NumberGuess-v1").click()
    wait(browser, lambda d: d.current_url.endswith("/env/NumberGuess-v1"))
    # A first view may show "being played" and reload itself once the sandbox is done.
    wait(browser, lambda d: d.find_elements(By.ID, "example"))
    assert browser.find_element(By.CSS_SELECTOR, "h1.envid").text.startswith("spade/NumberGuess-v1")
    assert (
        browser.find_element(By.ID, "gymmake").get_attribute("value")
        == "gym.make('spade/NumberGuess-v1')"
    )
    assert len(browser.find_elements(By.CSS_SELECTOR, "pre.code span.k")) > 10
    assert len(browser.find_elements(By.CSS_SELECTOR, "details.report")) == 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "section svg.chart")) == 2
    browser.find_element(By.CSS_SELECTOR, "button[data-copy=gymmake]").click()
    wait(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, "button[data-copy=gymmake]").text == "Copied",
    )
    # The card: the example episode (played in the sandbox) and the copyable snippet.
    assert "Correct, the number is" in browser.find_element(By.ID, "example").text
    assert browser.find_element(By.ID, "example-return").text == "1"
    snippet = browser.find_element(By.ID, "snippet").text
    assert 'env = gym.make("spade/NumberGuess-v1")' in snippet
    browser.find_element(By.CSS_SELECTOR, "button[data-copy=snippet]").click()
    wait(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, "button[data-copy=snippet]").text == "Copied",
    )
    no_script_ran(browser)
    shoot(browser, shots, "05-environment")


def test_a_card_links_to_the_diff_against_the_parent(browser, server, shots):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "env/NumberGuessHarder-v1")
    wait(browser, lambda d: d.find_elements(By.ID, "example"))
    assert browser.find_element(By.ID, "licence-name").text == "not recorded"
    change = browser.find_element(By.ID, "change")
    assert "vs its parent spade/NumberGuess-v1: +1 −1 lines" in change.text
    change.find_element(By.LINK_TEXT, "diff").click()
    wait(browser, lambda d: d.current_url.endswith("/env/NumberGuessHarder-v1/diff"))
    added = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#diff .dl.add")]
    removed = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#diff .dl.del")]
    assert added == ["+class NumberGuessHarder(TextEnv):"]
    assert removed == ["-class NumberGuess(TextEnv):"]
    no_script_ran(browser)
    shoot(browser, shots, "05b-diff")


def test_play_to_a_win_with_the_solution(browser, server, shots):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "env/NumberGuess-v1")
    browser.find_element(By.ID, "play").click()
    seed = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#start input[name=seed]"))
    seed.send_keys("3")
    browser.find_element(By.CSS_SELECTOR, "#start button[type=submit]").click()
    wait(browser, lambda d: "/play/" in d.current_url)
    shoot(browser, shots, "06-play-start")
    browser.find_element(By.ID, "op-solution").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "li.solution"))
    moves = len(browser.find_elements(By.CSS_SELECTOR, "li.sol"))
    assert moves >= 1
    for turn in range(moves):
        button = browser.find_element(By.CSS_SELECTOR, f"li.sol button[data-step='{turn}']")
        button.click()
        wait(
            browser,
            lambda d, t=turn: f"turn {t + 1} of" in d.find_element(By.CSS_SELECTOR, "p.facts").text,
        )
        if browser.find_elements(By.ID, "outcome"):
            break
    outcome = browser.find_element(By.ID, "outcome").text
    assert "WON" in outcome and browser.find_element(By.ID, "return").text == "1"
    assert not browser.find_elements(By.ID, "actform")  # the episode is over
    shoot(browser, shots, "07-play-won")


def test_export_what_the_list_shows(browser, server, downloads, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server.url + "envs?skill=math&status=validated")
    Select(browser.find_element(By.CSS_SELECTOR, "#export select[name=format]")).select_by_value(
        "jsonl"
    )
    shoot(browser, shots, "08-export")
    browser.find_element(By.CSS_SELECTOR, "#export button[type=submit]").click()
    deadline = time.monotonic() + 30
    files: list[Path] = []
    while time.monotonic() < deadline:
        files = [p for p in downloads.glob("*.jsonl")]
        if files and not list(downloads.glob("*.crdownload")):
            break
        time.sleep(0.2)
    assert len(files) == 1, list(downloads.iterdir())
    rows = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == [
        "spade/Nim-v1", "spade/NumberGuess-v1", "spade/NumberGuessHarder-v1"
    ]  # fmt: skip
    assert all(r["source"].startswith('"""') for r in rows)


def test_model_written_markup_shows_as_text(browser, server, shots):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "envs?q=EvilMarkup")
    no_script_ran(browser)
    assert EVIL_DESCRIPTION[:40] in browser.find_element(By.CSS_SELECTOR, "span.desc").text
    browser.get(server.url + "env/EvilMarkup-v1")
    wait(browser, lambda d: d.find_elements(By.ID, "example"))
    no_script_ran(browser)
    assert browser.find_element(By.ID, "description").text == EVIL_DESCRIPTION
    assert "&lt;script&gt;window.__pwned = 1" in browser.page_source
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main iframe")
    example = browser.find_element(By.ID, "example")
    assert '<b onmouseover="window.__pwned = 5">won</b>' in example.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#example pre *")
    shoot(browser, shots, "09-markup-environment")
    browser.find_element(By.ID, "play").click()
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#start button[type=submit]")).click()
    wait(browser, lambda d: "/play/" in d.current_url)
    first = browser.find_element(By.CSS_SELECTOR, "#transcript li.obs pre").text
    assert first.startswith(
        '<script>window.__pwned = 3</script><img src=x onerror="window.__pwned = 4">'
    )
    browser.find_element(By.ID, "op-hint").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#transcript li.hint"))
    assert (
        "<script>window.__pwned = 8</script>"
        in browser.find_element(By.CSS_SELECTOR, "li.hint pre").text
    )
    action = browser.find_element(By.ID, "action")
    action.send_keys('<img src=x onerror="window.__pwned = 13">')
    browser.find_element(By.ID, "send").click()
    wait(browser, lambda d: "turn 1 of" in d.find_element(By.CSS_SELECTOR, "p.facts").text)
    browser.find_element(By.ID, "op-solution").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "li.sol button"))
    browser.find_element(By.CSS_SELECTOR, "li.sol button").click()
    wait(browser, lambda d: d.find_elements(By.ID, "outcome"))
    assert "WON" in browser.find_element(By.ID, "outcome").text
    texts = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#transcript pre")]
    assert '<b onmouseover="window.__pwned = 5">won</b><svg onload="window.__pwned=6">' in texts
    assert not browser.find_elements(By.CSS_SELECTOR, "#transcript pre *")
    no_script_ran(browser)
    shoot(browser, shots, "10-markup-play")
    violations = [
        e for e in browser.get_log("browser") if "Content Security Policy" in e["message"]
    ]
    assert violations == []  # nothing even tried to run inline


def test_map_and_runs_pages(browser, server, shots):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "map?color=hint_gain")
    points = browser.find_elements(By.CSS_SELECTOR, "svg.map circle.pt")
    assert len(points) == server.app.registry.count()
    shoot(browser, shots, "11-map")
    browser.get(server.url + "runs")
    browser.find_element(By.LINK_TEXT, "run-a").click()
    wait(browser, lambda d: d.current_url.endswith("/runs/run-a"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart polyline")) == 8
    shoot(browser, shots, "12-run")


@pytest.mark.parametrize(
    "path",
    ["/envs", "/envs?q=guess+a+number&mode=semantic", "/envs?q=number&sort=relevance"],
)
def test_lists_and_search_results_fit_1400_px(browser, server, shots, path):
    """At 1,400 px nothing scrolls sideways and descriptions get room to be read."""
    browser.set_window_size(1400, 1000)
    browser.get(server.url.rstrip("/") + path)
    wait(browser, lambda d: d.find_elements("css selector", "table.envs tbody tr"))
    sizes = browser.execute_script(
        """
        const table = document.querySelector('table.envs');
        const desc = document.querySelector('table.envs tbody tr td:last-child');
        return {page: document.documentElement.scrollWidth,
                window: document.documentElement.clientWidth,
                table: table.getBoundingClientRect().right,
                wrap: table.parentElement.getBoundingClientRect().right,
                overflow: table.parentElement.scrollWidth - table.parentElement.clientWidth,
                desc: desc.getBoundingClientRect().width};
        """
    )
    shoot(browser, shots, "layout-" + path.strip("/").replace("?", "-").replace("&", "-")[:40])
    assert sizes["page"] <= sizes["window"], sizes
    assert sizes["overflow"] <= 0 and sizes["table"] <= sizes["wrap"] + 1, sizes
    assert sizes["desc"] >= 350, sizes
