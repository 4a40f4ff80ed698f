"""Sympy derivations behind every constant genbound uses (no torch here).

Each submodule derives the algebra of one book chapter and returns sympy expressions; tests evaluate
those expressions and assert that the numeric code in genbound uses exactly the same constants.
A function ``verify_*`` returns ``True`` when sympy proves an identity or a step of a proof.
"""
