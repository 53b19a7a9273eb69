"""The annotation app in a real headless Chromium: keyboard labelling, resume, jump, export,
untrusted text, two annotators at once. Skipped (with the reason) when Chromium is absent.

Set NEPOTISM_ANNOTATE_ARTIFACTS to a folder to keep the screenshot and the measured labelling
speed (speed.json) there; they always go to the test's tmp folder.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from nepotism.annotate.export import write_exports
from nepotism.store import Store
from nepotism.store.annotations import label_history, latest_labels
from nepotism.tables import read_table

pytestmark = pytest.mark.slow


def _keys(driver, text: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(text).perform()


def _page(driver):
    """Wait until a page has loaded and return its item number (None off item pages)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 15).until(lambda d: d.execute_script("return document.readyState") == "complete")
    path = driver.current_url.split("/", 3)[3]
    return int(path.split("/")[1]) if path.startswith("item/") else None


def _press(driver, key: str) -> int | None:
    """Press a key that leaves the page; wait for the next page; return its item number."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    _keys(driver, key)
    WebDriverWait(driver, 15).until(ec.staleness_of(old))
    return _page(driver)


def _orders(store_path, annotator):
    with Store(store_path) as store:
        rows = (
            store._conn()
            .execute("SELECT item_id, shown_first FROM annotation_orders WHERE annotator = ?", (annotator,))
            .fetchall()
        )
    return dict(rows)


def _expected_winner(item, shown_first: str, key: str) -> str | None:
    if key == "s":
        return None
    if key == "t":
        return "tie"
    side = shown_first if key == "a" else ("model_b" if shown_first == "model_a" else "model_a")
    return item.model(side)


def test_keyboard_labelling_resume_jump_export(tmp_path, make_collection, server_factory, browser_factory, model_names):
    from selenium.webdriver.common.by import By

    MODEL_A, MODEL_B = model_names
    store_path, items = make_collection(8, hostile=3)
    server = server_factory(store_path, "alice")
    driver = browser_factory()
    driver.get(server.url + "/")
    assert _page(driver) == 1
    assert MODEL_A not in driver.page_source and MODEL_B not in driver.page_source

    pressed: dict[int, str] = {}
    script_checked = False
    started = time.perf_counter()
    for position, key in zip(range(1, 6), "abtsa", strict=True):
        assert _page(driver) == position
        if position == 3:  # the response holding <script> and <img onerror>: text, not code
            text = driver.find_element(By.ID, "text-a").text + driver.find_element(By.ID, "text-b").text
            assert "<script>document.title = 'pwned'" in text and '<img src="x"' in text
            assert driver.title != "pwned"
            assert driver.execute_script("return typeof window.__pwned") == "undefined"
            assert not driver.find_elements(By.CSS_SELECTOR, "#text-a script, #text-b script, #text-a img, #text-b img")
            script_checked = True
        pressed[position] = key
        following = _press(driver, key)
        assert following == position + 1
    elapsed = time.perf_counter() - started
    assert script_checked

    # the progress shown counts what was pressed
    progress = driver.find_element(By.ID, "progress-text").text
    assert "4 labelled" in progress and "1 skipped" in progress and "3 to do" in progress

    # reload: same item, nothing lost; a new server on the same store resumes at the first gap
    driver.refresh()
    assert _page(driver) == 6
    server.stop()
    server = server_factory(store_path, "alice")
    driver.get(server.url + "/")
    assert _page(driver) == 6

    # jump with G to item 2 (labelled B), see the label, change it to A
    _keys(driver, "g")
    assert driver.switch_to.active_element.get_attribute("id") == "jump-input"
    _keys(driver, "2")
    from selenium.webdriver.common.keys import Keys

    assert _press(driver, Keys.ENTER) == 2
    assert driver.find_element(By.ID, "current-label").get_attribute("data-label") == "B"
    assert _press(driver, "a") == 6  # back to the first unlabelled item
    pressed[2] = "a"

    # previous / next with the keyboard
    assert _press(driver, "p") == 5
    assert _press(driver, "n") == 6
    started_again = time.perf_counter()
    for position, key in zip(range(6, 9), "bta", strict=True):
        pressed[position] = key
        following = _press(driver, key)
        assert following == (position + 1 if position < 8 else None)
    elapsed += time.perf_counter() - started_again
    assert driver.find_element(By.ID, "done-title").text == "Nothing left to label"
    assert "first-skipped" in driver.page_source  # item 4 was skipped

    # the exported references are what was pressed, mapped through the recorded order
    orders = _orders(store_path, "alice")
    expected = {}
    for position, key in pressed.items():
        item = items[position - 1]
        winner = _expected_winner(item, orders[item.item_id], key)
        if winner is not None:
            expected[item.instance_id] = winner
    with Store(store_path) as store:
        history = label_history(store, "pairs")
        summary = write_exports("pairs", items, history, tmp_path / "refs.csv", per_annotator_dir=tmp_path / "by")
    refs = read_table(tmp_path / "refs.csv", kind="preference-ref").frame
    assert dict(zip(refs["instance_id"], refs["winner"], strict=True)) == expected
    mine = read_table(tmp_path / "by" / "alice.csv", kind="preference-ref").frame
    assert dict(zip(mine["instance_id"], mine["winner"], strict=True)) == expected
    assert summary.outcomes["unlabelled"] == 1  # the skipped item
    assert len(history) == 9  # 8 items + one change, all kept
    assert all(label.elapsed_ms is not None for label in history)

    # screenshot of an item page and the measured speed
    driver.get(server.url + "/item/3")
    _page(driver)
    shot = tmp_path / "annotate_item.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    labelled = 8
    speed = {
        "items": labelled,
        "seconds": round(elapsed, 3),
        "items_per_minute": round(labelled / elapsed * 60.0, 1),
        "screenshot": str(shot),
    }
    (tmp_path / "speed.json").write_text(json.dumps(speed))
    print(f"\nannotate browser test: {speed}")
    folder = os.environ.get("NEPOTISM_ANNOTATE_ARTIFACTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        shutil.copy(shot, folder)
        with open(os.path.join(folder, "speed.json"), "w") as handle:
            json.dump(speed | {"screenshot": os.path.join(folder, shot.name)}, handle)


def test_two_annotators_at_once_keep_their_labels(make_collection, server_factory, browser_factory):
    store_path, items = make_collection(5)
    alice_server = server_factory(store_path, "alice")
    bob_server = server_factory(store_path, "bob")
    alice, bob = browser_factory(), browser_factory()
    alice.get(alice_server.url + "/")
    bob.get(bob_server.url + "/")
    assert _page(alice) == 1 and _page(bob) == 1
    for position in range(1, 6):  # interleaved: each press lands while the other is open
        assert _press(alice, "a") == (position + 1 if position < 5 else None)
        assert _press(bob, "t") == (position + 1 if position < 5 else None)
    with Store(store_path) as store:
        alice_labels = latest_labels(store, "pairs", "alice")
        bob_labels = latest_labels(store, "pairs", "bob")
    assert [label.pressed for label in alice_labels] == ["A"] * 5
    assert [label.winner for label in bob_labels] == ["tie"] * 5
    assert {label.item_id for label in alice_labels} == {item.item_id for item in items}
