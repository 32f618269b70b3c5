"""A small CNN on scikit-learn's 8x8 digits, written for PyTorch: it runs unchanged on PyTorch
(`python cnn_digits.py`) and on tensorgrad (`python -m tensorgrad.as_torch cnn_digits.py`).

Conv -> BatchNorm -> ReLU -> max-pool twice, dropout, a linear classifier; SGD with momentum and
a StepLR schedule; the best weights saved with torch.save and loaded back for the test score.

    python -m tensorgrad.as_torch examples/pytorch/cnn_digits.py --epochs 2
"""
import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=12)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# --- data: 1,797 images, 8x8 grey levels 0-16; a fixed 80/20 split --------------------------
digits = load_digits()
images = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)  # (N, 1, 8, 8)
labels = torch.tensor(digits.target, dtype=torch.long)
split = int(0.8 * len(labels))
generator = torch.Generator().manual_seed(args.seed)
train_loader = DataLoader(TensorDataset(images[:split], labels[:split]), batch_size=64,
                          shuffle=True, generator=generator)
test_loader = DataLoader(TensorDataset(images[split:], labels[split:]), batch_size=256)


# --- model ------------------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)  # (B, 16, 4, 4)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)  # (B, 32, 2, 2)
        return self.fc(self.dropout(torch.flatten(x, 1)))


model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = StepLR(optimizer, step_size=4, gamma=0.5)


def accuracy(loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
    return correct / len(loader.dataset)


# --- training ---------------------------------------------------------------------------------
checkpoint = os.path.join(tempfile.mkdtemp(), "best.pt")
best = 0.0
for epoch in range(args.epochs):
    model.train()
    total = 0.0
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
    scheduler.step()
    acc = accuracy(test_loader)
    if acc >= best:
        best = acc
        torch.save(model.state_dict(), checkpoint)
    print(f"epoch {epoch + 1}: loss {total / split:.4f}, test accuracy {acc:.4f}, "
          f"lr {scheduler.get_last_lr()[0]:.4f}")

restored = Net().to(device)
restored.load_state_dict(torch.load(checkpoint, weights_only=True))
model = restored
print(f"best test accuracy {accuracy(test_loader):.4f} (saved {best:.4f})")
