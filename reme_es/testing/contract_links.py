"""Contract mixins for the link graph: outlinks, inlinks, scopes, expansion (see `reme_es.testing.contract`)."""

from __future__ import annotations

from ..core.models import LinkScope
from ._common import ASYNC
from .data import chunk, file_with


class LinkContract:
    """Outlinks and inlinks with REAL / VIRTUAL / ALL, before and after the target is deleted and re-added."""

    pytestmark = ASYNC

    async def test_link_scopes_follow_the_target_being_deleted_and_re_added(self, store_factory):
        store = await store_factory()
        target = chunk("digest/target.md", "the target")
        src_b = chunk("digest/b.md", "links to target and a ghost")
        src_a = chunk("daily/2026-05-18.md", "also links to target")
        await store.upsert(
            [
                file_with(target.path, [target]),
                file_with(src_b.path, [src_b], links=[target.path, "digest/ghost.md", (target.path, "intro")]),
                file_with(src_a.path, [src_a], links=[target.path]),
            ]
        )
        out_all = [(lk.target, lk.anchor) for lk in await store.links.outlinks(src_b.path, LinkScope.ALL)]
        assert out_all == [("digest/target.md", ""), ("digest/ghost.md", ""), ("digest/target.md", "intro")]
        assert [lk.target for lk in await store.links.outlinks(src_b.path, LinkScope.REAL)] == [
            target.path,
            target.path,
        ]
        assert [lk.target for lk in await store.links.outlinks(src_b.path, LinkScope.VIRTUAL)] == ["digest/ghost.md"]
        inl = await store.links.inlinks(target.path, LinkScope.REAL)
        assert [(lk.source, lk.anchor) for lk in inl] == [
            ("daily/2026-05-18.md", ""),
            ("digest/b.md", ""),
            ("digest/b.md", "intro"),
        ]
        assert await store.links.inlinks(target.path, LinkScope.VIRTUAL) == []
        assert [lk.source for lk in await store.links.inlinks("digest/ghost.md", LinkScope.VIRTUAL)] == ["digest/b.md"]

        await store.delete(target.path)
        assert await store.links.inlinks(target.path, LinkScope.REAL) == []
        assert len(await store.links.inlinks(target.path, LinkScope.VIRTUAL)) == 3
        assert [lk.target for lk in await store.links.outlinks(src_b.path, LinkScope.REAL)] == []
        assert [lk.target for lk in await store.links.outlinks(src_b.path, LinkScope.VIRTUAL)] == [
            target.path,
            "digest/ghost.md",
            target.path,
        ]

        await store.upsert([file_with(target.path, [target])])
        assert len(await store.links.inlinks(target.path, LinkScope.REAL)) == 3
        assert await store.links.outlinks("digest/missing.md", LinkScope.ALL) == []

    async def test_links_of_several_files_at_once_equal_each_files_own(self, store_factory):
        store = await store_factory()
        a, b, c = (chunk(f"digest/{n}.md", n) for n in "abc")
        await store.upsert(
            [
                file_with(a.path, [a], links=[b.path, "digest/ghost.md", (c.path, "intro")]),
                file_with(b.path, [b], links=[a.path, c.path]),
                file_with(c.path, [c], links=[a.path]),
            ]
        )
        paths = [c.path, a.path, "digest/ghost.md", "digest/missing.md", a.path]
        for scope in (LinkScope.REAL, LinkScope.VIRTUAL, LinkScope.ALL):
            outs, ins = await store.links.outlinks_of(paths, scope), await store.links.inlinks_of(paths, scope)
            assert list(outs) == list(ins) == [c.path, a.path, "digest/ghost.md", "digest/missing.md"]
            for p in outs:
                assert outs[p] == await store.links.outlinks(p, scope), (scope, p)
                assert ins[p] == await store.links.inlinks(p, scope), (scope, p)
        assert [lk.source for lk in (await store.links.inlinks_of([a.path]))[a.path]] == [b.path, c.path]
        virtual = (await store.links.inlinks_of(["digest/ghost.md"], LinkScope.VIRTUAL))["digest/ghost.md"]
        assert [lk.target for lk in virtual] == ["digest/ghost.md"]

    async def test_rewriting_a_file_replaces_its_outlinks(self, store_factory):
        store = await store_factory()
        c = chunk("digest/a.md", "a")
        await store.upsert([file_with(c.path, [c], links=["digest/x.md", "digest/y.md"])])
        await store.upsert([file_with(c.path, [c], links=["digest/y.md"])])
        assert await store.links.inlinks("digest/x.md", LinkScope.ALL) == []
        assert [lk.source for lk in await store.links.inlinks("digest/y.md", LinkScope.ALL)] == ["digest/a.md"]

    async def test_expansion_is_bounded_and_marks_deleted_neighbours_virtual(self, store_factory):
        store = await store_factory()
        hub = chunk("digest/hub.md", "hub")
        spokes = [chunk(f"digest/s{i}.md", f"spoke {i}") for i in range(4)]
        await store.upsert(
            [file_with(hub.path, [hub], links=[s.path for s in spokes], front_matter={"name": "Hub"})]
            + [
                file_with(s.path, [s], links=[hub.path], front_matter={"name": f"S{i}", "description": f"d{i}"})
                for i, s in enumerate(spokes)
            ]
        )
        exp = await store.links.expand([hub.path], max_per_direction=2)
        assert [(n.direction, n.path, n.name, n.description, n.real) for n in exp[hub.path]] == [
            ("out", "digest/s0.md", "S0", "d0", True),
            ("out", "digest/s1.md", "S1", "d1", True),
            ("in", "digest/s0.md", "S0", "d0", True),
            ("in", "digest/s1.md", "S1", "d1", True),
        ]
        await store.delete("digest/s0.md")
        exp = await store.links.expand([hub.path, "digest/s1.md"], max_per_direction=2)
        assert [(n.direction, n.path, n.real, n.name) for n in exp[hub.path]] == [
            ("out", "digest/s0.md", False, ""),
            ("out", "digest/s1.md", True, "S1"),
            ("in", "digest/s1.md", True, "S1"),
            ("in", "digest/s2.md", True, "S2"),
        ]
        assert [(n.direction, n.path, n.name) for n in exp["digest/s1.md"]] == [
            ("out", "digest/hub.md", "Hub"),
            ("in", "digest/hub.md", "Hub"),
        ]
        assert await store.links.traverse("digest/s1.md", depth=2) == {
            "digest/s1.md": 0,
            "digest/hub.md": 1,
            "digest/s0.md": 2,
            "digest/s2.md": 2,
            "digest/s3.md": 2,
        }
