"""mkdocs hook: the benchmark plots stay where the bench scripts draw them (bench/*.png) and are served as img/*.png.

The pages link a plot as `../bench/<name>.png`, which resolves when the Markdown is read in the repository. mkdocs
serves only files under docs/, so this hook adds each bench/*.png to the site as `img/<name>.png` and points the
pages' links there before they are rendered; a plot that does not exist is left as it is, and the strict build fails
on its link.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

BENCH = Path(__file__).resolve().parent.parent / "bench"
PLOT_LINK = re.compile(r"\((?:\.\./)+bench/([\w.-]+\.png)\)")


def on_files(files, config):
    """Add every bench/*.png to the site as img/<name>.png."""
    for png in sorted(BENCH.glob("*.png")):
        files.append(File.generated(config, f"img/{png.name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Point `../bench/<name>.png` links at the plots' place in the site."""
    up = "../" * page.file.src_uri.count("/")

    def to_site(match: re.Match) -> str:
        name = match.group(1)
        return f"({up}img/{name})" if (BENCH / name).is_file() else match.group(0)

    return PLOT_LINK.sub(to_site, markdown)
