"""Hugging Face's conventions for classification heads, shared by the model families: the loss
a `...ForSequenceClassification` / `...ForImageClassification` takes from its labels, and the
label names config.json carries."""
import tensorgrad.nn.functional as F


def classification_loss(logits, labels, problem_type=None):
    """HF's loss for logits (B, num_labels): problem_type None picks regression (MSE) for one
    label, single-label classification (cross-entropy) for integer labels, multi-label
    classification (binary cross-entropy with logits) for float multi-hot labels."""
    n = logits.shape[-1]
    kind = problem_type or (
        "regression" if n == 1 else
        "single_label_classification" if labels.dtype.kind in "iu" else
        "multi_label_classification")
    if kind == "regression":
        labels = labels.to(logits.dtype)
        if n == 1:
            return F.mse_loss(logits.squeeze(), labels.squeeze())
        return F.mse_loss(logits, labels)
    if kind == "single_label_classification":
        return F.cross_entropy(logits.reshape(-1, n), labels.reshape(-1))
    if kind == "multi_label_classification":
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    raise ValueError(f"classification_loss: unknown problem_type {kind!r}")


def num_labels_from_hf(hf):
    """The number of labels a Hugging Face config.json gives (id2label wins, as there)."""
    return len(hf["id2label"]) if "id2label" in hf else hf.get("num_labels", 2)


def labels_to_hf(num_labels):
    """config.json's id2label / label2id for num_labels unnamed labels."""
    names = {str(i): f"LABEL_{i}" for i in range(num_labels)}
    return {"id2label": names, "label2id": {v: int(k) for k, v in names.items()}}
