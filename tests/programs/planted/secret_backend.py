"""PLANTED TEST FIXTURE (tests/test_SecretRedactor.cpp): a --plugin that registers the torch.compile
backend tcfuzz_planted_secret, whose every compilation fails with a message carrying two secrets. The
test writes a copy with @PLANTED_KEY@ and @PLANTED_TOKEN@ replaced by the fake secrets it puts in
tcfuzz's environment, so every compiled run is a crash mismatch whose message (in findings.sqlite,
crashes/, reports and repro.py, which inlines this file) must come out masked. Not a PyTorch bug."""
from torch._dynamo import register_backend

KEY = "@PLANTED_KEY@"
TOKEN = "@PLANTED_TOKEN@"


@register_backend
def tcfuzz_planted_secret(gm, example_inputs):
    """Fails every compilation, naming the secrets."""
    raise RuntimeError(f"planted leak: api key {KEY}, token {TOKEN}")
