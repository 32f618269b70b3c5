"""tensorgrad.nn: modules, layers, functional forms, initialisation, optimizers, checkpoints."""
