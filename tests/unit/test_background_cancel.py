"""Stopping a background task of the file store (reme_es/reme/background.py): the task has ended when `cancel`
returns, and an error it ended with is handed back, not lost."""

from __future__ import annotations

import asyncio

from reme_es.reme.background import cancel


async def test_a_running_task_is_cancelled_and_has_ended():
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(forever())
    await started.wait()
    assert await cancel(task) is None
    assert task.cancelled()


async def test_an_error_raised_while_stopping_is_returned():
    started = asyncio.Event()

    async def fails_on_cancel() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    task = asyncio.create_task(fails_on_cancel())
    await started.wait()
    failed = await cancel(task)
    assert isinstance(failed, RuntimeError) and str(failed) == "cleanup failed"
    assert task.done()


async def test_a_task_that_already_failed_hands_back_its_error():
    async def boom() -> None:
        raise ValueError("earlier failure")

    task = asyncio.create_task(boom())
    await asyncio.sleep(0)
    assert task.done()
    failed = await cancel(task)
    assert isinstance(failed, ValueError)


async def test_no_task_is_nothing_to_stop():
    assert await cancel(None) is None
