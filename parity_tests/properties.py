"""Every property the parity suite checks: its tests, its tolerance and why; the suite's
index, printed in ``parity_tests/README.md`` and run against the mutants."""

from __future__ import annotations

from dataclasses import dataclass

from parity_tests.tolerances import TOLERANCES


@dataclass(frozen=True)
class Property:
    title: str
    checks: str
    tests: tuple[str, ...]
    """Test function names, each optionally with a fragment of its parameter id: ``name[sgd``."""
    tolerances: tuple[str, ...] = ()
    """Keys of ``TOLERANCES``; none means the comparison is exact."""

    def selects(self, test_id: str) -> bool:
        """Whether ``test_id`` (``name[params]``, as pytest reports it) checks this property."""
        test_name, _, params = test_id.partition("[")
        patterns = (pattern.partition("[") for pattern in self.tests)
        return any(name == test_name and fragment in params for name, _, fragment in patterns)


PROPERTIES = {
    "outputs": Property(
        "forward outputs",
        "predict(x) equals the reference for 7 output-feedback configs, 3 state-feedback (GRU) "
        "configs of three depths and one sequence of T = 2000",
        ("test_each_call_equals_the_reference[predict]",),
        ("outputs",),
    ),
    "codes": Property(
        "codes",
        "encode(x) equals the reference's codes, for both feedbacks",
        ("test_each_call_equals_the_reference[encode]",),
        ("outputs",),
    ),
    "decoder": Property(
        "decoder-only reconstruction",
        "decode(z) equals the reference's; decode(encode(x)) equals predict(x); for both "
        "feedbacks (with state feedback, decode runs the GRU from s₀ = 0)",
        ("test_each_call_equals_the_reference[decode]", "test_decode_of_encode_equals_predict"),
        ("outputs", "self"),
    ),
    "loss": Property(
        "loss",
        "the loss of loss_and_grads(x, y) equals the reference's",
        ("test_loss_equals_the_reference",),
        ("loss",),
    ),
    "gradients": Property(
        "gradients",
        "every gradient is finite, not all zero, and equals the reference's",
        ("test_gradients_equal_the_reference",),
        ("gradients",),
    ),
    "quantized_codes": Property(
        "quantized codes",
        "with a code step Δ the code is rounded half to even and clipped inside the loop: "
        "encode returns grid values whose symbols equal the reference's exactly, and predict "
        "the reference's closed-loop outputs, on inputs at least 1e-4 steps of Δ from a tie "
        "(asserted); tanh (saturated) and swish latents, both feedbacks, four Δ",
        ("test_symbols_equal_the_references",),
        ("outputs",),
    ),
    "quantized_decode": Property(
        "quantized decoder input",
        "decode quantizes what it is given: off-grid codes (beyond the clip too) decode as "
        "their rounding, and as the reference decodes them; decode(encode(x)) equals "
        "predict(x); both feedbacks",
        ("test_decode_quantizes_what_it_is_given",),
        ("outputs", "self"),
    ),
    "straight_through": Property(
        "straight-through gradients",
        "with Δ set every gradient equals the reference's straight-through one (round passed "
        "as the identity, the clip blocking beyond ±Q·Δ), on codes either side of the clip; "
        "both feedbacks",
        ("test_straight_through_gradients_equal_the_references",),
        ("gradients",),
    ),
    "ties": Property(
        "rounding ties",
        "codes exactly k + ½ steps of Δ in float32 round to the even symbol (0.5 to 0, 2.5 to "
        "2, -2.5 to -2), and the outputs from them are the reference's; both feedbacks",
        ("test_a_tie_rounds_to_the_even_symbol",),
        ("outputs",),
    ),
    "rate": Property(
        "rate: loss and gradients",
        "with a rate weight λ the loss (distortion plus λ·bits under the learned prior) and "
        "every gradient, μ and ρ included, equal the reference's, on codes at least 1e-4 steps "
        "of Δ from a tie and symbols at least 1e-3 bit from the 24-bit floor (asserted); "
        "λ = 0: μ and ρ get zero gradients, loss and gradients the plain model's; both "
        "feedbacks",
        (
            "test_the_rate_loss_and_gradients_equal_the_references",
            "test_a_zero_rate_weight_adds_nothing_but_the_prior",
        ),
        ("loss", "gradients"),
    ),
    "rate_tails": Property(
        "rate where a difference of sigmoids cancels",
        "a prior several scales below the codes (symbols of 10 to 24 bits, and floored ones, "
        "which pass no gradient) and one of Δ/s ≤ 1e-4 around them: loss, gradients and "
        "frae.codec.bits equal the reference's; priors of s = e^−60 and e^110 floor every "
        "symbol, μ and ρ get zero gradients, none NaN; both feedbacks",
        (
            "test_symbols_in_the_far_tails_cost_their_bits_or_the_floor",
            "test_a_prior_much_wider_than_its_step_costs_the_references_bits",
            "test_a_prior_that_floors_every_symbol_passes_no_gradient",
        ),
        ("loss", "gradients"),
    ),
    "rate_training": Property(
        "training for the rate",
        "6 SGD and Adam steps with λ set equal the reference's, every loss and the weights, μ "
        "and ρ included (the margins asserted at every step); the loss falls, μ and ρ move; "
        "the trained model's integer prior keeps the contract's promise (0.01 bit of the "
        "reference's learned p where f ≥ 256, frequencies ≥ 1 summing to 2^24) and its bytes "
        "decompress on the reference; both feedbacks",
        (
            "test_fit_with_a_rate_follows_the_reference",
            "test_the_integer_prior_of_a_trained_model_keeps_its_promise",
        ),
        ("sgd", "sgd weights", "adam", "adam weights", "outputs"),
    ),
    "coding": Property(
        "coding: the model as a codec",
        "with a prior of the reference's symbols, compress's bytes read back to the reference's "
        "symbols exactly and decompress to its decode of them, one sequence without a batch "
        "axis; on inputs at least 1e-4 steps of Δ from a tie every backend makes the "
        "reference's bytes, each sequence within its information under the prior plus the "
        "coder's bound (ROUNDING_BITS a coded value, ENDING_BITS)",
        (
            "test_compressed_bytes_round_trip",
            "test_the_bytes_are_the_references_and_within_the_bound",
        ),
        ("outputs",),
    ),
    "coding_matrix": Property(
        "bytes across backends",
        "bytes made on the backend decompress on every partner (and the partner's on it) to the "
        "same symbols and the reference's decode of them",
        ("test_bytes_cross_to_the_partner_and_back",),
        ("outputs",),
    ),
    "hostile_bytes": Property(
        "hostile bytes",
        "every cut and every flipped bit of a stream, and another model's weights, are each a "
        "ValueError; coded bytes forged under a valid CRC read to symbols or a ValueError",
        ("test_damaged_bytes_and_another_model_are_refused",),
    ),
    "packets": Property(
        "packets",
        "a stream split into chunks (drawn by hypothesis, down to one frame) and sent as packets "
        "decodes to what decompress of the whole gives, for a batch and one sequence",
        ("test_any_split_into_packets_decodes_to_the_one_shot_result",),
        ("self",),
    ),
    "packet_overhead": Property(
        "packets that cost what they carry",
        "a sequence sent a frame a packet at B = 1: the packets' bits less their symbols' "
        "information under the prior, the opening packet apart, at most 16 on average",
        ("test_a_one_frame_packet_costs_at_most_16_bits_over_its_information",),
    ),
    "concealment": Property(
        "a stream that survives a lost packet",
        "packets lost (a gap in their numbers) or frames lost (Decoder.lost): the receiver "
        "conceals them and goes on, a frame for every frame sent, all finite",
        ("test_a_receiver_that_lost_packets_goes_on",),
    ),
    "refresh": Property(
        "a refresh brings the receiver back in step",
        "sent with a refresh every 4 frames, received on each partner with two packets lost: "
        "from the refresh on, the frames are a lossless receiver's, and the receiver's state "
        "ends equal to the sender's",
        ("test_a_refresh_brings_the_receiver_back_in_step",),
        ("self", "outputs"),
    ),
    "stateless": Property(
        "no state kept between calls",
        "each call starts from x̂₀ = 0 (s₀ = 0): the same output after other calls, sequences of "
        "a batch independent, a prefix gives the first steps; for both feedbacks",
        (
            "test_every_call_starts_from_zero_feedback",
            "test_sequences_in_a_batch_are_independent",
            "test_prefix_gives_the_same_first_steps",
        ),
        ("self",),
    ),
    "streaming": Property(
        "streaming",
        "predict, encode and decode cut into chunks (drawn by hypothesis, down to one frame) and "
        "chained through their states equal one call of the reference, outputs and last state, "
        "for a batch, a batch of one and one sequence; a call from a given state equals the "
        "reference's from it; initial_state is the zero state; for both feedbacks, and with "
        "a code step (and, for the output model, a rate weight)",
        (
            "test_chained_chunks_equal_one_call",
            "test_quantized_chunks_equal_one_call",
            "test_a_chunk_continues_from_the_state_it_is_given",
            "test_initial_state_is_the_zero_state",
        ),
        ("outputs",),
    ),
    "sender_state": Property(
        "the sender's state",
        "encode's last state is the decoder's feedback, what decode of its codes ends in, chunk "
        "after chunk; for both feedbacks",
        ("test_encode_ends_in_the_receivers_state",),
        ("self",),
    ),
    "handoff": Property(
        "a stream between backends",
        "encoded on one backend and decoded on another (both ways), and predicted on one for "
        "its first half and another for the rest, a stream equals the reference's one call; "
        "every pair of backends under test, the reference and a second object of each; for "
        "both feedbacks",
        ("test_stream_moves_between_backends",),
        ("outputs",),
    ),
    "bad_state": Property(
        "bad state",
        "every bad state (rank, width, batch, dtype, NaN or infinite after the cast, masked, a "
        "list, a scalar; a return_state that is not a bool) raises the named error, names the "
        "argument and changes nothing: weights, the next call, the state given; no call writes "
        "into the state it is given",
        (
            "test_bad_state_raises_and_changes_nothing",
            "test_a_state_beyond_the_compute_dtype_is_refused",
            "test_a_call_writes_into_no_state_it_is_given",
        ),
    ),
    "shapes": Property(
        "shapes and dtypes",
        "(B, T, ·) in and out, a 2-D sequence gives 2-D outputs, plain writable NumPy float arrays",
        ("test_shapes_and_dtypes", "test_one_sequence_gives_two_dimensional_outputs"),
    ),
    "bad_input": Property(
        "bad input",
        'every bad input of the contract\'s "Bad input" section raises the named error, names '
        "the argument and leaves the weights unchanged; values checked in the dtype the "
        "backend computes with; messages quote a summary, never the argument",
        (
            "test_bad_input_raises_and_leaves_weights",
            "test_bad_create_arguments",
            "test_values_beyond_the_compute_dtype_are_refused",
            "test_messages_quote_a_summary_not_the_argument",
        ),
    ),
    "divergence": Property(
        "divergence",
        "a fit whose loss turns non-finite at step k raises TrainingDiverged with the k - 1 "
        "finite losses and holds the weights from before step k - 1, bit for bit those of the "
        "same fit stopped there; an overflowing last update is undone; for both feedbacks",
        (
            "test_diverged_fit_holds_the_weights_before_the_previous_step",
            "test_overflowing_last_update_holds_the_weights_before_it",
        ),
    ),
    "threads": Property(
        "threads",
        "four threads call one object at once: no call fails, every output comes from one "
        "whole set of weights, no set_weights is undone; for both feedbacks",
        ("test_calls_from_threads_take_turns",),
    ),
    "initial_weights": Property(
        "initial weights",
        "create(config, seed=s) starts from the contract's NumPy draw, for 3 configs (one with "
        "the GRU's K, U, b_K, b_U drawn between the sides) and 4 seeds",
        ("test_initial_weights_follow_the_spec_rule",),
    ),
    "round_trip": Property(
        "weight round trip",
        "set_weights(get_weights()) and an .npz file leave outputs bit for bit; weights are "
        "copied in and out; for both feedbacks",
        (
            "test_weights_round_trip_bit_for_bit",
            "test_get_weights_returns_copies",
            "test_set_weights_copies_its_input",
            "test_weights_given_to_create_are_used",
        ),
    ),
    "sgd": Property(
        "SGD trajectory",
        "the loss of each of 50 SGD steps of fit, and the final weights, equal the reference's, "
        "for both feedbacks",
        ("test_training_follows_the_reference_step_by_step[sgd",),
        ("sgd", "sgd weights"),
    ),
    "adam": Property(
        "Adam trajectory",
        "the loss of each of 50 Adam steps (mini-batches, shuffled), and the final weights, "
        "equal the reference's, for both feedbacks",
        ("test_training_follows_the_reference_step_by_step[adam",),
        ("adam", "adam weights"),
    ),
    "learning": Property(
        "loss decrease",
        "fit halves the loss on multi-sine signals in 60 steps, lowers it on the original "
        "problem, changes every weight, and starts a fresh optimizer at each call (all but the "
        "original problem for both feedbacks); with a code step, fit lowers the loss by 30 %",
        (
            "test_fit_with_a_code_step_lowers_the_loss",
            "test_fit_halves_the_loss_on_a_learnable_signal",
            "test_fit_lowers_the_loss_on_the_original_problem",
            "test_fit_changes_the_weights_and_each_call_starts_a_fresh_optimizer",
        ),
    ),
    "resume": Property(
        "resumed training",
        "k SGD or Adam steps (mini-batches, shuffled) here, a checkpoint written and read, k "
        "more on a fresh object of a partner (itself, the reference; with Adam, each other "
        "backend), and the other way round, equal 2k uninterrupted steps of the one that "
        "finished and of the reference, every loss and the final weights; the state after "
        "fit (step, epoch, Adam's moments) is the reference's; a state fit cannot continue "
        "(another optimizer, a moment missing, extra, misshapen, not finite or negative, a "
        "negative count, not a state) is refused, naming it, with the weights untouched; for "
        "both feedbacks, and with a rate weight (μ, ρ and their moments)",
        (
            "test_a_checkpoint_resumes_fit_where_it_stopped",
            "test_a_checkpoint_crosses_to_each_other_backend",
            "test_the_state_after_fit_is_the_references",
            "test_a_state_fit_cannot_continue_is_refused_with_the_weights_untouched",
        ),
        ("sgd", "sgd weights", "adam", "adam weights"),
    ),
    "transfer": Property(
        "cross-framework transfer",
        "weights trained by fit here give the same outputs in each other backend, and back, for "
        "both feedbacks (a GRU's gate blocks exchanged on import shows)",
        ("test_trained_weights_transfer_to_every_other_backend",),
        ("outputs",),
    ),
    "random_configs": Property(
        "random configs and shapes",
        "predict, loss and gradients equal the reference's for configs and sizes drawn by "
        "hypothesis (widths, depths, F, L, B, T, activations; with state feedback H too)",
        (
            "test_random_configs_equal_the_reference",
            "test_random_state_configs_equal_the_reference",
        ),
        ("random outputs", "loss", "gradients"),
    ),
    "exports": Property(
        "exports",
        "each format a backend lists, exported with the weights it holds: in a fresh process "
        "that imports its runtime alone (no frae, Flax, optax or Keras beyond what the runtime "
        "imports), predict, encode and decode at two B and two T from states that are not "
        "zero, and a stream's chunks, equal the reference's, outputs and last state, as "
        "frae.load_exported does; one loop op (While, Loop, Scan) per function; an unknown or "
        "unmade format, a full folder, a file or a path under a file refused, nothing written "
        "and the model unchanged; for both feedbacks",
        (
            "test_every_artifact_equals_the_reference_in_its_runtime_alone",
            "test_the_formats_listed_are_the_contracts",
            "test_a_format_it_cannot_make_is_refused_and_nothing_written",
            "test_a_folder_that_cannot_take_the_artifact_is_refused",
            "test_a_model_exported_is_not_changed",
        ),
        ("outputs",),
    ),
    "data_parallel": Property(
        "data-parallel training",
        "create(devices=N): SGD and Adam losses (Adam resumed from its training state too), "
        "weights, Adam's moments and predictions on 4 virtual devices in one process (both "
        "models, the state model's codes quantized, and the output model with a rate weight), "
        "and on two processes joined by the "
        "framework's engine (the output model; both where a process holds one device), equal "
        "those on one device; an uneven mini-batch or too many devices is refused, naming "
        "them; a backend without an engine refuses devices > 1",
        (
            "test_data_parallel_equals_one_device",
            "test_data_parallel_across_processes",
            "test_devices_refused_without_engine",
        ),
        ("devices",),
    ),
}


def markdown_table() -> str:
    """The table of ``parity_tests/README.md``."""
    rows = ["| property | what is checked | tolerance (rtol, atol) and why |", "|---|---|---|"]
    for prop in PROPERTIES.values():
        tolerance = "<br>".join(
            f"`{key}`: {TOLERANCES[key]}: {TOLERANCES[key].reason}" for key in prop.tolerances
        )
        rows.append(f"| {prop.title} | {prop.checks} | {tolerance or 'exact'} |")
    return "\n".join(rows)
