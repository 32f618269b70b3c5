"""A Transformer-encoder sequence classifier, written for PyTorch: it runs unchanged on PyTorch
and on tensorgrad (`python -m tensorgrad.as_torch transformer_classifier.py`).

The task, generated: sequences of 4 to 24 tokens drawn from 1..VOCAB-1 (0 pads); the label says
whether token 1 occurs more often than token 2 (ties: no). Padded batches with a key padding
mask, nn.TransformerEncoder (batch_first, pre-LN), mean pooling over the real tokens, AdamW with
a OneCycleLR schedule stepped every batch.

    python -m tensorgrad.as_torch examples/pytorch/transformer_classifier.py --epochs 1
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.optim.lr_scheduler import OneCycleLR
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--examples", type=int, default=2000, help="training sequences")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
VOCAB, D_MODEL, HEADS, LAYERS = 8, 32, 4, 2

# --- data -------------------------------------------------------------------------------------
def make_examples(n, generator):
    lengths = torch.randint(4, 25, (n,), generator=generator).tolist()
    examples = []
    for length in lengths:
        tokens = torch.randint(1, VOCAB, (length,), generator=generator)
        label = int((tokens == 1).sum().item() > (tokens == 2).sum().item())
        examples.append((tokens, label))
    return examples


def collate(batch):
    """Pad to the longest sequence; True in the mask marks padding (PyTorch's convention)."""
    tokens = pad_sequence([t for t, _ in batch], batch_first=True, padding_value=0)
    return tokens, tokens == 0, torch.tensor([label for _, label in batch])


generator = torch.Generator().manual_seed(args.seed)
train_set, test_set = make_examples(args.examples, generator), make_examples(500, generator)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True, collate_fn=collate,
                          generator=generator)
test_loader = DataLoader(test_set, batch_size=250, collate_fn=collate)


# --- model ------------------------------------------------------------------------------------
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(1, 32, D_MODEL) * 0.02)
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=64, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, 2)

    def forward(self, tokens, padding):
        x = self.embed(tokens) + self.pos[:, :tokens.shape[1]]  # (B, T, D)
        x = self.encoder(x, src_key_padding_mask=padding)  # (B, T, D)
        keep = (~padding).unsqueeze(-1).float()  # (B, T, 1)
        return self.head((x * keep).sum(1) / keep.sum(1))  # mean over real tokens -> (B, 2)


model = Classifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
scheduler = OneCycleLR(optimizer, max_lr=3e-3, epochs=args.epochs,
                       steps_per_epoch=len(train_loader))


def accuracy(loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, padding, labels in loader:
            correct += (model(tokens, padding).argmax(-1) == labels).sum().item()
            total += len(labels)
    model.train()
    return correct / total


# --- training ---------------------------------------------------------------------------------
for epoch in range(args.epochs):
    total = 0.0
    for tokens, padding, labels in train_loader:
        loss = F.cross_entropy(model(tokens, padding), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        total += loss.item() * len(labels)
    print(f"epoch {epoch + 1}: loss {total / len(train_set):.4f}, test accuracy "
          f"{accuracy(test_loader):.4f}, lr {scheduler.get_last_lr()[0]:.5f}")
