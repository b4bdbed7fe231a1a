"""OCR of scanned PDF pages (``parsing.ocr``) with the real Tesseract, on the corpus scans and on
scans the tests make from them (a page turned in its raster, a page with one word).

Every page is read once per module (about a second a page) and shared through fixtures.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import pypdfium2
import pytest
from PIL import Image

from agrag_pipeline.parsing import ocr
from agrag_pipeline.parsing.errors import ParseTimeoutError
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import OcrSettings, PipelineSettings, load_settings

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "ocr"
SCANS = {"ocr_test": 0, "ocr_test_rotated_90": 90, "ocr_test_rotated_180": 180}
SETTINGS = OcrSettings()
_WORD = re.compile(r"[^\W_]+")

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not here")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _coverage(text: str, reference: str) -> float:
    ours, ref = Counter(_words(text)), Counter(_words(reference))
    return sum(min(n, ours[w]) for w, n in ref.items()) / sum(ref.values())


def _read(path: Path, settings: OcrSettings = SETTINGS) -> ocr.OcrPage:
    pdf = pypdfium2.PdfDocument(path)
    try:
        return ocr.ocr_page(pdf[0], 0, settings)
    finally:
        pdf.close()


@pytest.fixture(scope="module")
def scans() -> dict[str, ocr.OcrPage]:
    return {name: _read(CORPUS / f"{name}.pdf") for name in SCANS}


def _image_pdf(path: Path, image: Image.Image, dpi: int = 200) -> Path:
    image.save(path, "PDF", resolution=dpi)
    return path


@pytest.fixture(scope="module")
def rendered_scan() -> Image.Image:
    """The upright corpus scan as a 200-dpi grayscale image."""
    pdf = pypdfium2.PdfDocument(CORPUS / "ocr_test.pdf")
    try:
        return pdf[0].render(scale=200 / 72, grayscale=True).to_pil()
    finally:
        pdf.close()


@pytest.mark.parametrize("name", sorted(SCANS))
def test_each_corpus_scan_is_read_with_at_least_nine_tenths_of_the_reference_words(
    scans: dict[str, ocr.OcrPage], name: str
) -> None:
    page = scans[name]
    reference = (CORPUS / "groundtruth" / f"{name}.md").read_text("utf-8")
    assert _coverage(page.text, reference) >= 0.9, page.text
    assert page.words[0].text == "Docling"
    assert page.words[-1].text == "package"
    assert all(w.confidence >= SETTINGS.min_confidence and w.text.strip() for w in page.words)


@pytest.mark.parametrize("name", sorted(SCANS))
def test_the_turn_each_corpus_scan_needed_is_detected(
    scans: dict[str, ocr.OcrPage], name: str
) -> None:
    assert scans[name].rotation == SCANS[name]
    assert scans[name].orientation_source == ("upright" if SCANS[name] == 0 else "osd")


def test_words_come_in_reading_order_line_by_line(scans: dict[str, ocr.OcrPage]) -> None:
    page = scans["ocr_test_rotated_180"]
    assert page.text.splitlines() == [
        "Docling bundles PDF document conversion to",
        "JSON and Markdown in an easy self contained",
        "package",
    ]
    assert [w.line for w in page.words] == sorted(w.line for w in page.words)


def test_boxes_are_on_the_unrotated_page_where_the_words_are(
    scans: dict[str, ocr.OcrPage],
) -> None:
    for page in scans.values():
        assert (page.width, page.height) == pytest.approx((595.2, 841.9), abs=0.1)
        for word in page.words:
            x0, top, x1, bottom = word.box
            assert 0 <= x0 < x1 <= page.width and 0 <= top < bottom <= page.height
        title = page.words[0].box
        # The first word of the text block, at the top left of the page as stored.
        assert title[0] < 0.2 * page.width and title[3] < 0.15 * page.height
        assert 10 < title[3] - title[1] < 30  # about the height of 14-pt type
    # The three files hold the same image turned only by /Rotate: their boxes on the unrotated
    # page are the same, whichever way each page had to be turned to be read.
    upright = scans["ocr_test"].words
    for name in ("ocr_test_rotated_90", "ocr_test_rotated_180"):
        turned = scans[name].words
        assert [w.text for w in turned] == [w.text for w in upright]
        for a, b in zip(upright, turned, strict=True):
            assert a.box == pytest.approx(b.box, abs=1.0)


def test_a_scan_turned_in_its_raster_without_rotate_is_turned_back_and_read(
    tmp_path: Path, rendered_scan: Image.Image
) -> None:
    # The raster itself turned a quarter clockwise (a sideways scan, no /Rotate to help).
    sideways = _image_pdf(tmp_path / "sideways.pdf", rendered_scan.rotate(-90, expand=True))
    page = _read(sideways)
    assert page.rotation == 270
    reference = (CORPUS / "groundtruth" / "ocr_test.md").read_text("utf-8")
    assert _coverage(page.text, reference) >= 0.9
    # The page as stored is landscape; the text block's first word sits at its top right.
    assert page.width > page.height
    first = page.words[0].box
    assert first[0] > 0.8 * page.width and first[1] < 0.2 * page.height
    assert first[3] - first[1] > first[2] - first[0]  # a vertical word on the stored page


def test_the_skew_of_a_scan_is_measured_to_a_tenth_of_a_degree(rendered_scan: Image.Image) -> None:
    assert ocr.estimate_skew(rendered_scan) == 0.0
    for degrees in (10.0, -7.0, 2.0):
        skewed = rendered_scan.rotate(degrees, expand=True, fillcolor=255)
        assert ocr.estimate_skew(skewed) == pytest.approx(degrees, abs=0.2)


def _centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


@pytest.mark.parametrize("degrees", [10, -6])
def test_a_scan_skewed_on_the_scanner_is_straightened_and_read_with_boxes_where_the_words_are(
    tmp_path: Path, rendered_scan: Image.Image, scans: dict[str, ocr.OcrPage], degrees: int
) -> None:
    # The page laid askew: turned counter-clockwise (10) or clockwise (-6) in its raster, which
    # Tesseract alone reads no word of (at 10 degrees) or only part of.
    skewed = rendered_scan.rotate(degrees, expand=True, fillcolor=255)
    page = _read(_image_pdf(tmp_path / "skewed.pdf", skewed))
    reference = (CORPUS / "groundtruth" / "ocr_test.md").read_text("utf-8")
    assert _coverage(page.text, reference) >= 0.9, page.text
    assert page.rotation == 0 and page.words[0].text == "Docling"
    # Each word's box is on the skewed page where the word is: the upright page's word centre
    # turned with the page, within 3 points.
    theta = math.radians(degrees)
    (w, h), (sw, sh) = rendered_scan.size, skewed.size
    scale = 72 / 200
    upright = {word.text: word.box for word in scans["ocr_test"].words}
    for word in page.words:
        if word.text not in upright:
            continue
        ux, uy = _centre(upright[word.text])
        dx, dy = ux / scale - w / 2, uy / scale - h / 2
        expected = (
            (dx * math.cos(theta) + dy * math.sin(theta) + sw / 2) * scale,
            (-dx * math.sin(theta) + dy * math.cos(theta) + sh / 2) * scale,
        )
        assert _centre(word.box) == pytest.approx(expected, abs=3.0), word


def test_a_page_too_large_to_render_at_the_set_dpi_is_read_at_the_resolution_that_fits(
    tmp_path: Path, rendered_scan: Image.Image, scans: dict[str, ocr.OcrPage]
) -> None:
    """The scan on a poster-sized page (12 dpi: 138 x 195 in). At the set 200 dpi that is a
    billion pixels: a 200-inch page took 3.3 GB and ran past the page's time budget, failing
    the document. It is read at the resolution that fits ``MAX_RENDER_PIXELS``, said so."""
    page = _read(_image_pdf(tmp_path / "poster.pdf", rendered_scan, dpi=12))
    reference = (CORPUS / "groundtruth" / "ocr_test.md").read_text("utf-8")
    assert _coverage(page.text, reference) >= 0.9, page.text
    assert page.warnings[0] == (
        "page 1 is 138 x 195 in: read by OCR at 38 dpi, not 200 (at most 40 million pixels a page)"
    )
    # Boxes are in the page's points, as on the letter-sized scan, 200 / 12 times larger.
    first = scans["ocr_test"].words[0]
    assert page.words[0].text == first.text
    assert page.words[0].box == pytest.approx([v * 200 / 12 for v in first.box], rel=0.05)


@pytest.fixture(scope="module")
def one_word_pdf(
    tmp_path_factory: pytest.TempPathFactory,
    rendered_scan: Image.Image,
    scans: dict[str, ocr.OcrPage],
) -> Path:
    """One word ("package") cut from the scan, upside down on an empty page, at (800, 1200) px."""
    x0, top, x1, bottom = (round(v * 200 / 72) for v in scans["ocr_test"].words[-1].box)
    word = rendered_scan.crop((x0 - 6, top - 6, x1 + 6, bottom + 6)).rotate(180)
    canvas = Image.new("L", rendered_scan.size, 255)
    canvas.paste(word, (800, 1200))
    return _image_pdf(tmp_path_factory.mktemp("ocr") / "one_word.pdf", canvas)


def test_a_page_too_sparse_for_orientation_detection_is_read_at_its_best_turn(
    one_word_pdf: Path,
) -> None:
    # OSD gives up on so little text, so every turn is read and the most confident kept.
    page = _read(one_word_pdf)
    assert page.orientation_source == "tried"
    assert page.rotation == 180
    assert [w.text for w in page.words] == ["package"]
    assert page.words[0].box[0] == pytest.approx(800 * 72 / 200, abs=6)


def test_the_page_time_budget_covers_all_its_tesseract_calls_together(one_word_pdf: Path) -> None:
    # This page takes five Tesseract calls (a reading, OSD, three more turns) of about 0.3 s
    # of CPU each (1.5 s in all, measured here): 0.7 s is enough for one of them, not for all.
    with pytest.raises(ParseTimeoutError, match=r"page 1 took over 0.7 s .*page_timeout_s"):
        _read(one_word_pdf, OcrSettings(page_timeout_s=0.7))


def test_an_empty_page_gives_no_words_and_says_so(tmp_path: Path) -> None:
    page = _read(_image_pdf(tmp_path / "blank.pdf", Image.new("L", (1654, 2339), 255)))
    assert page.words == []
    assert page.warnings == ["page 1: OCR found no words"]


def test_fingerprint_names_the_engine_its_version_languages_and_trained_data() -> None:
    first_line = subprocess.run(
        ["tesseract", "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    fp = ocr.engine_fingerprint(SETTINGS)
    assert fp["engine"] == "tesseract"
    assert first_line == f"tesseract {fp['version']}"
    assert fp["languages"] == "eng" and fp["dpi"] == "200"
    assert re.fullmatch(r"[0-9a-f]{64}", fp["traineddata.eng"])
    assert re.fullmatch(r"[0-9a-f]{64}", fp["traineddata.osd"])
    assert ocr.engine_fingerprint(OcrSettings(dpi=300)) != fp
    assert ocr.engine_fingerprint(OcrSettings(languages=["eng"])) == fp


def test_an_ocr_setting_changes_the_sections_code_version_and_a_chunker_setting_does_not() -> None:
    base = load_settings()
    data = base.model_dump(mode="json")

    def sections_version(**changes: dict[str, object]) -> str:
        changed = {**data, **{k: {**data[k], **v} for k, v in changes.items()}}
        return Runtime(PipelineSettings.model_validate(changed)).code_versions()["sections"]

    before = sections_version()
    assert before.startswith("parse-")
    assert sections_version(parsing={"ocr": {**data["parsing"]["ocr"], "dpi": 300}}) != before
    assert sections_version(chunker={"target_tokens": 120}) == before


def test_a_missing_language_is_ocr_unavailable_naming_the_debian_package() -> None:
    # Old Georgian: a real Tesseract language that bin/setup does not install.
    with pytest.raises(ocr.OcrUnavailableError, match=r"tesseract-ocr-kat-old") as caught:
        _read(CORPUS / "ocr_test.pdf", OcrSettings(languages=["eng", "kat_old"]))
    assert "apt-get install" in str(caught.value)
    assert "kat_old" in str(caught.value)


def test_without_tesseract_on_path_ocr_is_unavailable_and_the_fingerprint_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a real PATH holding no tesseract
    ocr._tesseract.cache_clear()
    try:
        with pytest.raises(ocr.OcrUnavailableError, match=r"apt-get install tesseract-ocr"):
            _read(CORPUS / "ocr_test.pdf")
        assert ocr.engine_fingerprint(SETTINGS)["version"] == "unavailable"
    finally:
        monkeypatch.undo()
        ocr._tesseract.cache_clear()


def test_a_page_past_its_time_budget_is_a_timeout_naming_the_page() -> None:
    with pytest.raises(ParseTimeoutError, match=r"OCR of page 1 took over .*page_timeout_s"):
        _read(CORPUS / "ocr_test.pdf", OcrSettings(dpi=300, page_timeout_s=0.02))


def test_a_page_in_a_script_no_configured_language_reads_names_the_language_to_install(
    tmp_path: Path,
) -> None:
    # The top third of the corpus's Arabic PDF page, scanned (enough text for OSD, quick to read).
    pdf = pypdfium2.PdfDocument(CORPUS.parent / "pdf" / "right_to_left_01.pdf")
    try:
        image = pdf[0].render(scale=200 / 72, grayscale=True).to_pil()
    finally:
        pdf.close()
    top = image.crop((0, 0, image.width, image.height // 3))
    # Only the configured languages (with auto_languages an installed ara is read instead).
    page = _read(_image_pdf(tmp_path / "arabic_scan.pdf", top), OcrSettings(auto_languages=False))
    assert page.script == "Arabic"
    assert any(
        "Arabic script" in w and "tesseract-ocr-ara" in w and "parsing.ocr.languages" in w
        for w in page.warnings
    ), page.warnings


# -- end to end: the PDF parser and the pipeline on the scans --------------------------------


@pytest.mark.parametrize("name", sorted(SCANS))
def test_parse_document_gives_a_scan_ocr_text_and_sections_with_page_boxes(name: str) -> None:
    from agrag_pipeline.parsing import parse_document

    raw = (CORPUS / f"{name}.pdf").read_bytes()
    parsed = parse_document(raw, f"scans/{name}.pdf")
    reference = (CORPUS / "groundtruth" / f"{name}.md").read_text("utf-8")
    assert _coverage(parsed.text_layer, reference) >= 0.9
    assert parsed.text_layer.startswith("Docling bundles PDF document conversion to")
    assert any("OCR" in w for w in parsed.warnings), parsed.warnings
    boxes = [b for s in parsed.sections for b in s.boxes]
    assert parsed.sections and all(s.pages == [1] for s in parsed.sections)
    assert boxes and all(b.page == 1 and b.origin == "top-left" for b in boxes)
    # The first line's box is at the top left of the unrotated page, whatever the turn.
    first = min(boxes, key=lambda b: b.y0)
    assert first.x0 < 120 and first.y0 < 130 and first.x1 > 400


def test_agrag_core_on_a_folder_of_scans_makes_chunks_with_page_boxes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agrag_pipeline.cli import main
    from agrag_pipeline.models import Document
    from agrag_pipeline.storage import Warehouse
    from agrag_pipeline.storage.tables import chunks_from_table

    raw = tmp_path / "raw" / "scans"
    raw.mkdir(parents=True)
    for name in SCANS:
        (raw / f"{name}.pdf").write_bytes((CORPUS / f"{name}.pdf").read_bytes())
    status = main(
        [
            "core",
            "--raw-root",
            str(tmp_path / "raw"),
            "--warehouse",
            str(tmp_path / "wh"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-embed",
            "--workers",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    warehouse = Warehouse(str(tmp_path / "wh"))
    for name in SCANS:
        document_id = Document.node_id_for(f"scans/{name}.pdf")
        chunks = chunks_from_table(warehouse.read_table("chunks", document_id))
        assert chunks, name
        assert "Docling bundles PDF document conversion" in chunks[0].text
        for chunk in chunks:
            assert chunk.provenance.kind == "page" and chunk.provenance.pages == [1]
            assert chunk.provenance.boxes
        metadata = warehouse.table_metadata("sections", document_id)
        assert metadata is not None
        engine = metadata["ocr_engine"]
        assert '"engine":"tesseract"' in engine and '"version":"' in engine


@pytest.mark.slow
def test_agrag_materialize_on_a_folder_of_scans_makes_chunks_with_page_boxes_and_embeddings(
    tmp_path: Path,
) -> None:
    from agrag_pipeline.models import Document
    from agrag_pipeline.storage import Warehouse
    from agrag_pipeline.storage.tables import chunks_from_table

    raw = tmp_path / "raw" / "scans"
    raw.mkdir(parents=True)
    for name in SCANS:
        (raw / f"{name}.pdf").write_bytes((CORPUS / f"{name}.pdf").read_bytes())
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agrag_pipeline.cli",
            "--raw-root",
            str(tmp_path / "raw"),
            "--warehouse",
            str(tmp_path / "wh"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "materialize",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 succeeded, 0 failed" in done.stdout
    warehouse = Warehouse(str(tmp_path / "wh"))
    for name in SCANS:
        document_id = Document.node_id_for(f"scans/{name}.pdf")
        chunks = chunks_from_table(warehouse.read_table("chunks", document_id))
        assert "Docling bundles PDF document conversion" in chunks[0].text
        assert all(c.provenance.kind == "page" and c.provenance.boxes for c in chunks)
        assert warehouse.read_table("embeddings", document_id).num_rows == len(chunks)
