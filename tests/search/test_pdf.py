"""PDF captures in a real cluster: `dlweb search rebuild` indexes the readable ones, counts the
others by reason and names them in its log, and `dlweb search` finds the PDF by its words."""

import io
import json
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from deploy.testing.cluster import clusters_in

from .conftest import dlweb
from .test_extract import pdf

REPORT = "http://harbour.dlweb.test/report.pdf"
DAMAGED = "http://harbour.dlweb.test/damaged.pdf"
SCANNED = "http://harbour.dlweb.test/scanned.pdf"  # pages without text, as a scan's
WORDS = "The harbour master counted forty fishing boats in the winter of 1923."


def write_warc(path: Path) -> Path:
    report = pdf(WORDS, "Most of them were rebuilt after the storm.", title="Harbour report")
    captures = [(REPORT, report), (DAMAGED, report[:200]), (SCANNED, pdf(""))]
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, body in captures:
            headers = [("Content-Type", "application/pdf"), ("Content-Length", str(len(body)))]
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": "2020-05-01T12:00:00Z"},
            )
            writer.write_record(record)
    return path


def test_a_pdf_capture_is_found_after_a_rebuild(tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    with clusters_in(tmp_path / "cluster") as make:
        cluster = make(nodes=1, replicas=1)
        config = str(cluster.config_path)
        done = dlweb("import", "-c", config, str(write_warc(tmp_path / "pdf.warc.gz")))
        assert done.returncode == 0, done.stdout + done.stderr
        index = str(tmp_path / "index")
        done = dlweb("search", "rebuild", "-c", config, "--index", index)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "indexed 1 page versions of 3" in done.stdout, done.stdout
        assert "1 unreadable PDF" in done.stdout and "1 PDF without text" in done.stdout
        assert f"{DAMAGED}: unreadable PDF" in done.stderr, done.stderr
        assert f"{SCANNED}: PDF without text" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    done = dlweb("search", "--index", index, "--json", "fishing", "boats")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["hits"]
    assert [(h["url"], h["title"], h["content_type"]) for h in hits] == [
        (REPORT, "Harbour report", "application/pdf")
    ]
    assert hits[0]["lang"] == "en" and "<b>fishing</b> <b>boats</b>" in hits[0]["snippet_html"]
