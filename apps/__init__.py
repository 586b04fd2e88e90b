"""Applications of the FRAE suite: each composes the core (``frae``) with the backends
(``impls``) for one purpose, one package each; ``frae``'s command line reaches them."""
