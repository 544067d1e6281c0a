"""The QR code the desk makes in the page (web_ui/static/js/qr.js; no internet at the
venue): every version it makes (1-15, level M), and each of the eight masks (at version 7,
with its version bits), reads back as its text with OpenCV's decoders, Cyrillic included; the text too long for version 15
is refused, not cut."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.server import ServerProcess

pytestmark = pytest.mark.browser

# Byte counts at the top of each version's capacity at level M (byte mode), 1 to 15.
CAPACITY_M = [14, 26, 42, 62, 84, 106, 122, 152, 180, 213, 251, 287, 331, 362, 412]


def read_qr(image: np.ndarray) -> str:
    """The text of the QR code in a grey image ("" if none is read): OpenCV's two decoders,
    each at a few scales."""
    import cv2

    detectors = [cv2.QRCodeDetector()]
    if hasattr(cv2, "QRCodeDetectorAruco"):
        detectors.append(cv2.QRCodeDetectorAruco())
    for detector in detectors:
        for scale in (1, 2, 3):
            scaled = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST)
            text, _, _ = detector.detectAndDecode(scaled)
            if text:
                return str(text)
    return ""


def _decoded(modules: list[list[bool]]) -> str:
    """The text of a symbol's modules, drawn 5 px a module with its quiet zone."""
    symbol = np.pad(np.where(np.array(modules, dtype=bool), 0, 255).astype(np.uint8), 4,
                    constant_values=255)
    return read_qr(np.kron(symbol, np.ones((5, 5), dtype=np.uint8)))


def test_every_version_and_mask_reads_back(shared_server: ServerProcess, context: Any) -> None:
    page = context.new_page()
    page.goto(f"{shared_server.url}/desk?lang=en")
    texts = [("x" * n)[:n] for n in CAPACITY_M]
    texts += ["http://192.168.1.10:8000/referee?table=7#token=Abc-_0123456789abcdefghijklmnop",
              "Судья стола 1 — ёжик"]
    made = page.evaluate("""async (texts) => {
        const { qrModules } = await import('/static/js/qr.js');
        const out = [];
        for (const text of texts) out.push({ text, mask: null, modules: qrModules(text) });
        for (const mask of [0, 1, 2, 3, 4, 5, 6, 7]) {  // at version 7: with its version bits
            out.push({ text: texts[6], mask, modules: qrModules(texts[6], { mask }) });
        }
        let refused = null;
        try { qrModules('x'.repeat(413)); } catch (e) { refused = String(e); }
        return { out, refused };
    }""", texts)
    sizes = {len(m["modules"]) for m in made["out"] if len(m["text"]) in CAPACITY_M}
    assert sizes == {17 + 4 * v for v in range(1, 16)}  # each version once
    unread = [(len(m["text"].encode()), m["mask"]) for m in made["out"]
              if _decoded(m["modules"]) != m["text"]]
    assert unread == []
    assert "413 bytes is more than version 15 holds" in made["refused"]
