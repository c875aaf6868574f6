"""The stub server's command line (`python -m medresilience.testing.stub`): prints
``LISTENING http://HOST:PORT/v1`` first, serves until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Sequence

from . import __doc__ as _PACKAGE_DOC
from .faults import Faults
from .policies import POLICIES, RESPONSE_FORMAT_MODES
from .server import StubServer


def arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m medresilience.testing.stub", description=_PACKAGE_DOC.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    p.add_argument("--policy", default="hash", choices=POLICIES)
    p.add_argument("--json-text", default="{}", help="the text the json_fixed policy returns")
    p.add_argument("--model", default="stub-model", help="the id listed by /v1/models")
    p.add_argument(
        "--response-format", default="ignore", choices=RESPONSE_FORMAT_MODES, help="a json_schema response_format: ignored, honoured, or rejected (400)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the fault assignment")
    p.add_argument("--delay", type=float, default=0.0, help="seconds added to every chat response")
    p.add_argument("--rate-429", type=float, default=0.0)
    p.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on 429s")
    p.add_argument("--rate-500", type=float, default=0.0)
    p.add_argument("--rate-503", type=float, default=0.0)
    p.add_argument("--retry-after-5xx", type=float, default=None, help="Retry-After seconds on 500/503 (default: none)")
    p.add_argument("--rate-timeout", type=float, default=0.0)
    p.add_argument("--timeout-sleep", type=float, default=10.0)
    p.add_argument("--rate-malformed", type=float, default=0.0)
    p.add_argument("--malformed-kind", default="alternate", choices=("alternate", "invalid_json", "no_choices"))
    p.add_argument("--rate-permanent", type=float, default=0.0)
    p.add_argument("--transient-attempts", type=int, default=1)
    p.add_argument("--rate-null-content", type=float, default=0.0, help="a 200 whose message content is null")
    p.add_argument("--rate-null-message", type=float, default=0.0, help="a 200 whose message is null")
    p.add_argument("--rate-429-long", type=float, default=0.0, help="a 429 with the long Retry-After")
    p.add_argument("--retry-after-long", type=float, default=3600.0, help="Retry-After seconds of the long 429s")
    p.add_argument("--rate-401", type=float, default=0.0, help="a 401 echoing the bearer key, every attempt")
    p.add_argument("--rate-404", type=float, default=0.0, help="a 404 model not found, every attempt")
    p.add_argument("--rate-content-parts", type=float, default=0.0, help="a 200 whose content is a list of text parts, every attempt")
    p.add_argument("--rate-content-number", type=float, default=0.0, help="a 200 whose content is a number")
    p.add_argument("--rate-echo-key", type=float, default=0.0, help="a 200 whose answer is the bearer key, every attempt")
    p.add_argument("--rate-drip", type=float, default=0.0, help="a 200 dripped one byte every --drip-interval seconds")
    p.add_argument("--drip-interval", type=float, default=1.0)
    p.add_argument("--rate-no-logprobs", type=float, default=0.0, help="a 200 without log-probabilities though asked, every attempt")
    p.add_argument("--rate-surrogate", type=float, default=0.0, help="a 200 whose answer ends in a lone UTF-16 surrogate (valid JSON), every attempt")
    p.add_argument("--log", default=None, help="append one JSON line per chat request to this file")
    return p


def faults_from_args(args: argparse.Namespace) -> Faults:
    return Faults(
        seed=args.seed,
        delay=args.delay,
        rate_429=args.rate_429,
        retry_after=args.retry_after,
        rate_500=args.rate_500,
        rate_503=args.rate_503,
        retry_after_5xx=args.retry_after_5xx,
        rate_timeout=args.rate_timeout,
        timeout_sleep=args.timeout_sleep,
        rate_malformed=args.rate_malformed,
        malformed_kind=args.malformed_kind,
        rate_permanent=args.rate_permanent,
        transient_attempts=args.transient_attempts,
        rate_null_content=args.rate_null_content,
        rate_null_message=args.rate_null_message,
        rate_429_long=args.rate_429_long,
        retry_after_long=args.retry_after_long,
        rate_401=args.rate_401,
        rate_404=args.rate_404,
        rate_content_parts=args.rate_content_parts,
        rate_content_number=args.rate_content_number,
        rate_echo_key=args.rate_echo_key,
        rate_drip=args.rate_drip,
        drip_interval=args.drip_interval,
        rate_no_logprobs=args.rate_no_logprobs,
        rate_surrogate=args.rate_surrogate,
    )


async def _serve(args: argparse.Namespace, faults: Faults) -> None:
    server = StubServer(
        args.policy, faults, args.log, json_text=args.json_text, model=args.model, host=args.host, port=args.port, response_format=args.response_format
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.astart()
    try:
        sys.stdout.write(f"LISTENING {server.base_url}\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        await server.astop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser()
    args = parser.parse_args(argv)
    try:
        faults = faults_from_args(args)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        parser.error(str(e))
    try:
        import uvloop  # type: ignore[import-not-found]

        factory: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_serve(args, faults))
    return 0
