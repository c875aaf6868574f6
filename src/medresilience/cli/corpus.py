"""`medres corpus ...`: the local evidence index of the retrieval setting (thin: parse, call
medresilience.corpus, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the `corpus` command group to the main app."""
    from ..corpus import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP
    from .kit import command_group, console, user_errors

    group = command_group(app, "corpus", "A local full-text evidence index (SQLite FTS5) for --setting retrieval:INDEX.")

    @group.command("index")
    @user_errors
    def index(
        source: Annotated[Path, typer.Argument(help="JSON lines of passages ({id, title, text}), a .txt/.md file, a PubMedQA file, or a directory of them")],
        out: Annotated[Path, typer.Option("--out", help="the index file to write (an existing index is replaced; any other file is left alone)")],
        field: Annotated[str, typer.Option("--field", help="the passage text field of JSON lines")] = "text",
        chunk_words: Annotated[int, typer.Option("--chunk-words", help="longer documents are split into passages of this many words")] = DEFAULT_CHUNK_WORDS,
        overlap: Annotated[int, typer.Option("--overlap", help="words shared by consecutive passages of one document")] = DEFAULT_OVERLAP,
    ) -> None:
        """Build the index (a benchmark's answer key is refused: suites, benchmark and release files)."""
        from ..corpus import build_index

        m = build_index(source, out, field=field, chunk_words=chunk_words, overlap=overlap)
        c = m["counts"]
        skipped = f"; {len(m['skipped'])} other files skipped" if m["skipped"] else ""
        console.print(
            f"index {out}: {c['passages']} passages of {c['documents']} documents from {c['files']} files{skipped} (hash {m['index_hash']})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        console.print(f"use it with: medres eval --setting none --setting retrieval:{out},k=3", highlight=False, markup=False, soft_wrap=True)

    @group.command("search")
    @user_errors
    def search(
        index_path: Annotated[Path, typer.Argument(help="an index built by medres corpus index")],
        query: Annotated[str, typer.Argument(help="question text, as the retrieval setting would query it")],
        k: Annotated[int, typer.Option("--k", "-k", help="passages to show")] = 3,
    ) -> None:
        """Show the passages the retrieval setting would add for a question."""
        from ..corpus import CorpusIndex

        with CorpusIndex(index_path) as idx:
            hits = idx.search(query, k)
        if not hits:
            console.print("no passage matched", highlight=False, markup=False)
        for p in hits:
            console.print(f"[E{p.rank}] {p.citation}  bm25 {p.score:.3f}\n{p.text}\n", highlight=False, markup=False, soft_wrap=True)
