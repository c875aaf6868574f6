"""Models: specs (`spec`: a model named by provider/model or URL, its decoding and limits), the
providers table (`providers`), the OpenAI-compatible client (`openai_compatible`), the embedded
default (`embedded`) and serving it on 127.0.0.1 (`serving`), URL helpers (`urls`).

May import: registry, runtime."""
