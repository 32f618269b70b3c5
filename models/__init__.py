"""tensorgrad.models: GPT, BERT, T5, the original Transformer, ViT, LoRA."""
