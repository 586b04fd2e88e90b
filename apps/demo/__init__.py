"""Both FRAE models on a real signal, in every installed backend: ``frae demo``.

The signal is Japanese Vowels (UCI; Kudo, Toyama and Shimbo, 1999): nine speakers saying
/ae/, each utterance 7 to 29 frames of 12 LPC cepstrum coefficients, 270 utterances for
training and 370 held out. It is measured speech, not a synthetic curve; multichannel, with
channels that share information (a code of 4 for a frame of 12 has something to exploit);
small enough to train on in seconds in every backend; and it ships inside sktime (the
``demo`` extra), so nothing is downloaded when the demo runs.

One job per module: ``settings`` (the models and their training), ``data`` (the windows),
``worker`` (one backend's training, in a process of its own), ``rate_distortion`` (the
held-out SNR and the closed-loop quantiser's rate), ``crossing`` (each backend's bytes
decoded on every other), ``packet_loss`` (the SNR through lost packets, with and without
refreshes of the sender's state), ``tables`` and ``plots`` (what is shown), ``cli`` (the
command, ``run_demo``, which writes ``results.json`` and ``tables.txt`` beside the plots).

    frae demo [--out reports/demo] [--backends NAME ...] [--epochs N] [--jobs N]
"""
